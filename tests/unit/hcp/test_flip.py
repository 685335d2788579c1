"""The flip's pure rules (plugins/module_utils/hcp/flip.py): what refuses a flip before any change, which sidecars
must acknowledge, and the one write."""
import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import flip, sidecar

NS = "clusters-prod-01"
SETTINGS = {"image": "quay.io/hypershift/capi-proxy:1.0.0", "image_pull_policy": "IfNotPresent",
            "mount_path": "/etc/capi-proxy", "port": 8080, "metrics_port": 9090, "log_level": "info",
            "use_own_credentials": True, "extra_args": [], "resources": {}, "liveness_probe": {},
            "readiness_probe": {}, "config_map_name": "capi-proxy-kubeconfig", "main_containers": []}


def deployment(name, with_sidecar=True, follows=True, rolled=True):
    spec = {"containers": [{"name": "manager", "image": "capi:1"}]}
    if with_sidecar:
        container = sidecar.sidecar_container(SETTINGS, NS)
        if not follows:
            container["args"] = [arg for arg in container["args"] if not arg.startswith("--mode-config-map")]
        spec["containers"].append(container)
    status = {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}
    if not rolled:
        status.update(replicas=2, updatedReplicas=1)
    return {"metadata": {"name": name, "namespace": NS, "generation": 2}, "spec": {"replicas": 1, "template": {"spec": spec}},
            "status": status}


def pod(name, owner, running=True, terminating=False):
    metadata = {"name": name, "ownerReferences": [{"kind": "ReplicaSet", "name": owner + "-7c9d8f6b5"}]}
    if terminating:
        metadata["deletionTimestamp"] = "2026-11-29T01:00:00Z"
    state = {"running": {"startedAt": "2026-11-29T00:00:00Z"}} if running else {"waiting": {"reason": "ContainerCreating"}}
    return {"metadata": metadata, "status": {"containerStatuses": [{"name": "manager", "state": state},
                                                                  {"name": "kube-apiserver-proxy", "state": state}]}}


def test_sidecars_that_follow_the_mode_and_rolled_out_allow_a_flip():
    assert flip.sidecar_problems([deployment("cluster-api"), deployment("capi-provider"), deployment("other", False)],
                                 ["cluster-api", "capi-provider", "missing"], NS) == []


@pytest.mark.parametrize("broken, expected", [
    (deployment("cluster-api", with_sidecar=False),
     "Deployment clusters-prod-01/cluster-api has no API proxy sidecar: put it in first with migrate_fleet.yml with private_capi_migrate_strategy=zero_stop"),
    (deployment("cluster-api", follows=False),
     "Deployment clusters-prod-01/cluster-api has an API proxy sidecar that does not follow the mode ConfigMap "
     "capi-proxy-mode (put in by an older release): run migrate_fleet.yml with private_capi_migrate_strategy=zero_stop"),
    (deployment("cluster-api", rolled=False),
     "Deployment clusters-prod-01/cluster-api is still rolling out its API proxy sidecar (replicas 1 wanted, 1 "
     "updated, 1 available, 2 in all): wait until `kubectl -n clusters-prod-01 rollout status deployment/cluster-api` "
     "succeeds"),
])
def test_a_deployment_not_ready_for_a_flip_is_named_with_the_step_that_fixes_it(broken, expected):
    problems = flip.sidecar_problems([broken, deployment("capi-provider")], ["cluster-api", "capi-provider"], NS)
    assert len(problems) == 1 and problems[0].startswith(expected)


@pytest.mark.parametrize("config_map, allowed, expected", [
    ({"data": {"mode": "passthrough"}}, ("passthrough",), None),
    ({"data": {"mode": "translate"}}, ("passthrough", "translate"), None),
    (None, ("passthrough",), "the proxy mode ConfigMap clusters-prod-01/capi-proxy-mode: the ConfigMap does not exist; "
                             "create it with migrate_fleet.yml with private_capi_migrate_strategy=zero_stop"),
    ({"data": {"mode": "translate"}}, ("passthrough",),
     "the proxy mode ConfigMap clusters-prod-01/capi-proxy-mode holds mode translate, expected passthrough"),
])
def test_the_mode_config_map_must_hold_an_allowed_mode(config_map, allowed, expected):
    problem = flip.mode_problem(config_map, NS, allowed)
    assert problem == expected if expected is None else problem.startswith(expected)


def test_only_running_sidecars_of_the_named_deployments_must_acknowledge():
    pods = [pod("cluster-api-7c9d8f6b5-aaaaa", "cluster-api"),
            pod("cluster-api-7c9d8f6b5-bbbbb", "cluster-api", running=False),  # reads the new mode as it starts
            pod("cluster-api-7c9d8f6b5-ccccc", "cluster-api", terminating=True),
            pod("capi-provider-7c9d8f6b5-ddddd", "capi-provider"),
            pod("other-7c9d8f6b5-eeeee", "other")]
    running = flip.running_sidecars(pods, ["cluster-api", "capi-provider"])
    assert running == ["capi-provider-7c9d8f6b5-ddddd", "cluster-api-7c9d8f6b5-aaaaa"]
    config_map = {"data": {"mode": "translate", "applied.cluster-api-7c9d8f6b5-aaaaa": "translate",
                           "applied.capi-provider-7c9d8f6b5-ddddd": "passthrough"}}
    assert flip.unacknowledged(config_map, running, "translate") == ["capi-provider-7c9d8f6b5-ddddd"]
    assert flip.unacknowledged(config_map, running, "passthrough") == ["cluster-api-7c9d8f6b5-aaaaa"]
    assert flip.running_sidecars(pods, []) == []


def test_the_flip_is_one_write_that_also_drops_the_acknowledgements_of_pods_gone():
    config_map = {"data": {"mode": "passthrough", "applied.a": "passthrough", "applied.gone": "passthrough"}}
    assert flip.flip_patch(config_map, "translate", ["a"]) == {"data": {"mode": "translate", "applied.gone": None}}
    done = {"data": {"mode": "translate", "applied.a": "translate"}}
    assert flip.flip_patch(done, "translate", ["a"]) is None  # a re-run writes nothing


@pytest.mark.parametrize("deployments, config_map, expected", [
    ([deployment("cluster-api"), deployment("capi-provider")], {"data": {"mode": "translate"}}, True),
    ([deployment("cluster-api"), deployment("capi-provider")], {"data": {"mode": "passthrough"}}, True),
    # an older release's sidecar, or none: the way back stops the controllers to take it out
    ([deployment("cluster-api"), deployment("capi-provider", follows=False)], {"data": {"mode": "translate"}}, False),
    ([deployment("cluster-api", with_sidecar=False)], {"data": {"mode": "translate"}}, False),
    ([deployment("cluster-api")], None, False),
    ([deployment("other")], {"data": {"mode": "translate"}}, False),
])
def test_the_way_back_keeps_the_controllers_running_only_where_every_sidecar_follows_the_mode(deployments, config_map,
                                                                                             expected):
    assert flip.zero_stop_way_back(deployments, ["cluster-api", "capi-provider"], NS, config_map) is expected


def test_each_strategy_is_one_procedure_the_role_follows():
    from ansible_collections.hypershift.private_capi.plugins.filter.fleet_record import FilterModule
    from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.strategy import strategy_steps
    assert strategy_steps("zero_stop") == {"strategy": "zero_stop", "proxy_ahead": True, "quiesce_pause_group": "",
                                           "window_pause_group": "cluster.x-k8s.io", "fence_mark": "fence",
                                           "proxy_steps": "all", "proxy_mode": "passthrough", "proxy_mark": "sidecar"}
    assert strategy_steps("scale_down") == {"strategy": "scale_down", "proxy_ahead": False,
                                            "quiesce_pause_group": "cluster.x-k8s.io", "window_pause_group": "",
                                            "fence_mark": "pause", "proxy_steps": "prepare", "proxy_mode": "translate",
                                            "proxy_mark": "prepare"}
    assert FilterModule().filters()["migrate_strategy"]("zero_stop") == strategy_steps("zero_stop")
    with pytest.raises(Exception, match="migrate_strategy: the strategy must be one of zero_stop, scale_down, got "
                                        "'fast' \\(private_capi_migrate_strategy\\)"):
        FilterModule().filters()["migrate_strategy"]("fast")


class AckingClient(object):
    """The mode ConfigMap and the Pods of a namespace; each sidecar acknowledges on the n-th read after the flip, and
    one Pod goes away (deleted) before it ever does."""

    def __init__(self, clock):
        self.clock = clock
        self.requests = []
        self.config_map = {"data": {"mode": "passthrough"}}
        self.pods = [pod("cluster-api-7c9d8f6b5-aaaaa", "cluster-api"), pod("capi-provider-7c9d8f6b5-bbbbb", "capi-provider")]
        self.reads_after_flip = 0

    def get_or_none(self, path, what):
        self.requests.append(("GET", path, self.clock.now))
        if self.config_map["data"]["mode"] == "translate":
            self.reads_after_flip += 1
            if self.reads_after_flip == 3:
                self.config_map["data"]["applied.cluster-api-7c9d8f6b5-aaaaa"] = "translate"
                self.pods = self.pods[:1]  # capi-provider's Pod is deleted: it never acknowledges
        return {"data": dict(self.config_map["data"])}

    def list(self, path, what):
        self.requests.append(("LIST", path, self.clock.now))
        return list(self.pods)

    def patch(self, path, body, what):
        self.requests.append(("PATCH", path, self.clock.now))
        self.config_map["data"].update(body["data"])
        return {"data": dict(self.config_map["data"])}


class Clock(object):
    now = 0.0

    def sleep(self, seconds):
        self.now += seconds


def test_the_flip_reads_the_acknowledgements_often_and_lists_the_pods_once_a_second():
    clock = Clock()
    client = AckingClient(clock)
    service = flip.FlipService(client, NS, ["cluster-api", "capi-provider"], clock=lambda: clock.now, sleep=clock.sleep)
    result = service.flip("translate", timeout=30)
    lists = [at for verb, path, at in client.requests if verb == "LIST" and path.endswith("/pods")]
    # the Deployments read once, before the write: does a named one point at the namespace's shared proxy?
    assert [path for verb, path, _at in client.requests if verb == "LIST" and path.endswith("/deployments")] == [
        "/apis/apps/v1/namespaces/%s/deployments" % NS]
    gets = [at for verb, _path, at in client.requests if verb == "GET"]
    # one write; acknowledgements polled every POLL_SECONDS; the Pods listed before the write and then once a
    # second, which lets the wait end when the unacknowledged Pod went away
    assert [verb for verb, _path, _at in client.requests].count("PATCH") == 1
    assert len(lists) == 2 and lists[1] - lists[0] >= flip.RUNNING_SECONDS
    assert len(gets) > 10 and gets[2] - gets[1] == pytest.approx(flip.POLL_SECONDS)
    assert result["pods"] == ["cluster-api-7c9d8f6b5-aaaaa"] and result["waited_seconds"] >= flip.RUNNING_SECONDS


def test_a_flip_after_the_deployments_were_read_reads_them_no_more():
    clock = Clock()
    client = AckingClient(clock)
    service = flip.FlipService(client, NS, ["cluster-api", "capi-provider"], clock=lambda: clock.now, sleep=clock.sleep)
    service.read_deployments()  # as check() and the rollback's way back read them
    read = len(client.requests)
    service.flip("translate", timeout=30)
    assert [path for verb, path, _at in client.requests[read:] if path.endswith("/deployments")] == []


class RollingClient(object):
    """Deployments whose rollouts finish on the n-th read (a Pod Ready again), and a mode ConfigMap in pass-through."""

    def __init__(self, clock, deployments, ready_on_read):
        self.clock = clock
        self.deployments = deployments
        self.ready_on_read = ready_on_read
        self.reads = 0

    def list(self, path, what):
        self.reads += 1
        if self.reads >= self.ready_on_read:
            return [deployment(d["metadata"]["name"], with_sidecar=flip.has_sidecar(d)) for d in self.deployments]
        return list(self.deployments)

    def get_or_none(self, path, what):
        return {"data": {"mode": "passthrough"}}


def checked(deployments, ready_on_read, timeout):
    clock = Clock()
    client = RollingClient(clock, deployments, ready_on_read)
    service = flip.FlipService(client, NS, ["cluster-api", "capi-provider"], clock=lambda: clock.now, sleep=clock.sleep)
    try:
        return service.check(("passthrough",), rollout_timeout=timeout), service.result, client.reads
    except flip.FlipError as exc:
        return exc, service.result, client.reads


def test_the_check_waits_for_a_rollout_that_finishes_within_its_timeout():
    # a sidecar's Pod not Ready for a while (a probe failed under load): waited for, then the flip goes on
    config_map, result, reads = checked([deployment("cluster-api", rolled=False), deployment("capi-provider")], 4, 60)
    assert config_map == {"data": {"mode": "passthrough"}} and reads == 4
    assert result["rollout_waited_seconds"] == pytest.approx(3 * flip.RUNNING_SECONDS)


def test_the_check_refuses_a_rollout_that_does_not_finish_in_time_naming_it():
    error, result, reads = checked([deployment("cluster-api", rolled=False), deployment("capi-provider")], 1000, 10)
    assert isinstance(error, flip.FlipError) and "cluster-api is still rolling out its API proxy sidecar" in str(error)
    assert result["rollout_waited_seconds"] >= 10 and reads == 11


def test_the_check_does_not_wait_when_a_rollout_cannot_cure_the_problem():
    # no sidecar at all beside a rollout in progress: refused on the first read
    error, result, reads = checked([deployment("cluster-api", rolled=False),
                                    deployment("capi-provider", with_sidecar=False)], 1000, 60)
    assert isinstance(error, flip.FlipError) and "capi-provider has no API proxy sidecar" in str(error)
    assert reads == 1 and result["rollout_waited_seconds"] == 0
