"""as=Table: durations, the JSONPath subset, real CAPI printer columns on the v1beta2 examples, built-ins."""
import copy
import glob
import os

import pytest
import yaml

from testenv.upstream import CAPI_CRDS as CRDS, CAPI_EXAMPLES_V1BETA2 as EXAMPLES
from tests.kubeapi.errors import ApiError
from tests.kubeapi.table import (JsonPathError, build_table, columns_for_builtin, columns_for_crd_version,
                                 evaluate_jsonpath, human_duration, parse_jsonpath)

NOW = 1_700_000_000                       # 2023-11-14T22:13:20Z
FIVE_MINUTES_AGO = "2023-11-14T22:08:20Z"
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # the C loader reads the big CRDs 6x faster


@pytest.mark.parametrize("seconds, text", [
    (-2, "<invalid>"), (-1, "0s"), (-0.5, "0s"), (0, "0s"), (59, "59s"), (119, "119s"), (120, "2m"), (125, "2m5s"),
    (599, "9m59s"), (600, "10m"), (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (3 * 3600 + 300, "3h5m"),
    (8 * 3600, "8h"), (47 * 3600 + 3599, "47h"), (48 * 3600, "2d"), (51 * 3600, "2d3h"), (8 * 86400, "8d"),
    (729 * 86400, "729d"), (730 * 86400, "2y"), (740 * 86400, "2y10d"), (8 * 365 * 86400, "8y"),
])
def test_human_duration_matches_apimachinery(seconds, text):
    assert human_duration(seconds) == text


# -- JSONPath ------------------------------------------------------------------------------------------

DATA = {"metadata": {"labels": {"app.kubernetes.io/name": "web", "tier": "front"}},
        "spec": {"replicas": 3, "ports": [{"port": 80}, {"port": 443}, {"port": 8080}]},
        "status": {"conditions": [{"type": "Ready", "status": "True", "count": 2},
                                  {"type": "Available", "status": "False", "count": 5}]}}


@pytest.mark.parametrize("path, values", [
    (".spec.replicas", [3]),
    ("{.spec.replicas}", [3]),
    ("$.spec.replicas", [3]),
    (".metadata.labels.tier", ["front"]),
    (".metadata.labels.app\\.kubernetes\\.io/name", ["web"]),
    (".metadata.labels['app.kubernetes.io/name']", ["web"]),
    (".spec.ports[0].port", [80]),
    (".spec.ports[-1].port", [8080]),
    (".spec.ports[1:].port", [443, 8080]),
    (".spec.ports[*].port", [80, 443, 8080]),
    (".metadata.labels.*", ["web", "front"]),
    ("..port", [80, 443, 8080]),
    ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
    (".status.conditions[?(@.type=='Available')].status", ["False"]),
    ('.status.conditions[?(@.type!="Ready")].type', ["Available"]),
    (".status.conditions[?(@.count>3)].type", ["Available"]),
    (".status.conditions[?(@.count<=2)].type", ["Ready"]),
    (".status.conditions[?(@.missing)].type", []),
    (".status.conditions[?(@.type)].type", ["Ready", "Available"]),
    (".spec.missing.deeper", []),
    (".spec.replicas.deeper", []),
])
def test_jsonpath_subset(path, values):
    assert evaluate_jsonpath(parse_jsonpath(path), DATA) == values


@pytest.mark.parametrize("path", [".spec.ports[x]", ".spec.ports[0", "spec", ".a[?(nonsense)]", ".a[?(@.b==zzz)]"])
def test_jsonpath_parse_errors(path):
    with pytest.raises(JsonPathError):
        parse_jsonpath(path)


@pytest.mark.parametrize("path", [".spec.ports[7]", '.spec[?(@.a=="b")]', ".status.conditions[?(@.count==\"2\")]"])
def test_jsonpath_evaluation_errors(path):
    with pytest.raises(JsonPathError):
        evaluate_jsonpath(parse_jsonpath(path), DATA)


# -- CRD printer columns (real CAPI CRDs and v1beta2 examples) --------------------------------------------------

def load_crds():
    crds = {}
    for path in sorted(glob.glob(os.path.join(CRDS, "*.yaml"))):
        with open(path) as handle:
            crd = yaml.load(handle, Loader=YAML_LOADER)
        crds[(crd["spec"]["group"], crd["spec"]["names"]["kind"])] = crd
    return crds


def load_examples():
    objects = []
    for path in sorted(glob.glob(os.path.join(EXAMPLES, "*.yaml"))):
        with open(path) as handle:
            objects.extend(doc for doc in yaml.load_all(handle, Loader=YAML_LOADER) if isinstance(doc, dict) and "kind" in doc)
    return objects


CAPI_CRDS = load_crds()
EXAMPLE_OBJECTS = [obj for obj in load_examples()
                   if (obj["apiVersion"].split("/")[0], obj["kind"]) in CAPI_CRDS]


def version(crd, name="v1beta2"):
    return next(v for v in crd["spec"]["versions"] if v["name"] == name)


def stored(obj):
    obj = copy.deepcopy(obj)
    obj["metadata"].update(creationTimestamp=FIVE_MINUTES_AGO, resourceVersion="42", uid="u-1")
    return obj


def test_examples_cover_the_main_capi_kinds():
    kinds = {obj["kind"] for obj in EXAMPLE_OBJECTS}
    assert {"Cluster", "Machine", "MachineDeployment", "MachinePool", "MachineHealthCheck", "ClusterClass"} <= kinds


@pytest.mark.parametrize("obj", EXAMPLE_OBJECTS, ids=lambda o: "%s/%s" % (o["kind"], o["metadata"]["name"]))
def test_every_v1beta2_example_renders_with_its_crd_columns(obj):
    crd_version = version(CAPI_CRDS[(obj["apiVersion"].split("/")[0], obj["kind"])])
    columns = columns_for_crd_version(crd_version)
    table = build_table([stored(obj)], columns, "Metadata", {"resourceVersion": "77"}, NOW)
    declared = crd_version["additionalPrinterColumns"]
    assert [d["name"] for d in table["columnDefinitions"]] == ["Name"] + [c["name"] for c in declared]
    assert [d["priority"] for d in table["columnDefinitions"][1:]] == [c.get("priority", 0) for c in declared]
    assert table["columnDefinitions"][0] == {"name": "Name", "type": "string", "format": "name",
                                             "description": table["columnDefinitions"][0]["description"],
                                             "priority": 0}
    row = table["rows"][0]
    assert row["cells"][0] == obj["metadata"]["name"]
    assert len(row["cells"]) == len(declared) + 1
    for column, cell in zip(declared, row["cells"][1:]):
        if column["jsonPath"] == ".metadata.creationTimestamp":
            assert cell == "5m"
        elif column["jsonPath"] == ".spec.clusterName":
            assert cell == obj["spec"]["clusterName"]
        elif column["jsonPath"].startswith(".status"):
            assert cell is None          # the examples carry no status
    assert row["object"] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": stored(obj)["metadata"]}
    assert table["metadata"] == {"resourceVersion": "77"}


def test_cluster_row_with_status():
    cluster = stored(next(o for o in EXAMPLE_OBJECTS if o["kind"] == "Cluster"
                          and (o["spec"].get("topology") or {}).get("classRef")))
    cluster["status"] = {
        "phase": "Provisioned",
        "conditions": [{"type": "Available", "status": "True"}, {"type": "Paused", "status": "False"}],
        "controlPlane": {"desiredReplicas": 3, "replicas": 3, "readyReplicas": 2, "availableReplicas": 2,
                         "upToDateReplicas": 3},
        "workers": {"desiredReplicas": 2, "replicas": 2, "readyReplicas": 2, "availableReplicas": 1,
                    "upToDateReplicas": 2}}
    table = build_table([cluster], columns_for_crd_version(version(CAPI_CRDS[("cluster.x-k8s.io", "Cluster")])),
                        None, None, NOW)
    cells = dict(zip([d["name"] for d in table["columnDefinitions"]], table["rows"][0]["cells"]))
    assert cells == {"Name": cluster["metadata"]["name"], "ClusterClass": cluster["spec"]["topology"]["classRef"]["name"],
                     "Available": "True", "CP Desired": 3, "CP Current": 3, "CP Ready": 2, "CP Available": 2,
                     "CP Up-to-date": 3, "W Desired": 2, "W Current": 2, "W Ready": 2, "W Available": 1,
                     "W Up-to-date": 2, "Paused": "False", "Phase": "Provisioned", "Age": "5m",
                     "Version": cluster["spec"]["topology"]["version"]}
    assert table["metadata"] == {"resourceVersion": "42"}        # single GET: the object's resourceVersion


def test_machine_address_filters_and_missing_values():
    machine = stored(next(o for o in EXAMPLE_OBJECTS if o["kind"] == "Machine"))
    machine["status"] = {"addresses": [{"type": "ExternalIP", "address": "203.0.113.9"},
                                       {"type": "InternalIP", "address": "10.0.0.4"},
                                       {"type": "InternalIP", "address": "10.0.0.5"}],
                         "nodeRef": {"name": "node-1"}, "phase": "Running"}
    table = build_table([machine], columns_for_crd_version(version(CAPI_CRDS[("cluster.x-k8s.io", "Machine")])),
                        "None", {}, NOW)
    cells = dict(zip([d["name"] for d in table["columnDefinitions"]], table["rows"][0]["cells"]))
    assert cells["Internal-IP"] == "10.0.0.4"         # only the first result is shown
    assert cells["External-IP"] == "203.0.113.9"
    assert cells["Node Name"] == "node-1" and cells["Phase"] == "Running"
    assert cells["Ready"] is None and cells["OS-Image"] is None
    assert table["rows"][0]["object"] is None
    assert table["metadata"] == {}


def test_version_without_printer_columns_gets_age():
    columns = columns_for_crd_version({"name": "v1", "served": True, "storage": True})
    table = build_table([{"metadata": {"name": "a", "creationTimestamp": FIVE_MINUTES_AGO}}], columns, "Object",
                        None, NOW)
    assert [(d["name"], d["type"]) for d in table["columnDefinitions"]] == [("Name", "string"), ("Age", "date")]
    assert table["rows"][0]["cells"] == ["a", "5m"]
    assert table["rows"][0]["object"]["metadata"]["name"] == "a"


@pytest.mark.parametrize("column_type, value, cell", [
    ("string", "x", "x"), ("string", 3, "3"), ("string", 2.5, "2.5"), ("string", 1e6, "1e+06"),
    ("string", True, "true"), ("string", None, "<no value>"), ("string", {"b": 1, "a": "<"}, '{"a":"\\u003c","b":1}'),
    ("string", [1, "x"], '[1,"x"]'),
    ("integer", 3, 3), ("integer", 3.9, 3), ("integer", "3", None), ("integer", True, None), ("integer", None, None),
    ("number", 3, 3.0), ("number", 2.5, 2.5), ("number", "2.5", None),
    ("boolean", True, True), ("boolean", "true", None),
    ("date", FIVE_MINUTES_AGO, "5m"), ("date", "2023-11-14T22:08:20.5+00:00", "4m59s"), ("date", "yesterday", "<invalid>"),
    ("date", "", "<unknown>"), ("date", 5, None),
])
def test_typed_cells_follow_the_crd_convertor(column_type, value, cell):
    columns = columns_for_crd_version({"additionalPrinterColumns": [
        {"name": "V", "type": column_type, "jsonPath": ".spec.v"}]})
    table = build_table([{"metadata": {"name": "n"}, "spec": {"v": value}}], columns, None, None, NOW)
    assert table["rows"][0]["cells"] == ["n", cell]
    assert table["columnDefinitions"][1]["description"] == "Custom resource definition column (in JSONPath format): .spec.v"


def test_invalid_printer_column_stops_the_column_list_like_the_real_convertor():
    columns = columns_for_crd_version({"additionalPrinterColumns": [
        {"name": "A", "type": "string", "jsonPath": ".a"}, {"name": "B", "type": "string", "jsonPath": ".b[x]"},
        {"name": "C", "type": "string", "jsonPath": ".c"}]})
    assert [d["name"] for d in columns.definitions] == ["Name", "A"]


def test_include_object_values_and_list_metadata():
    columns = columns_for_builtin("", "configmaps")
    cm = {"metadata": {"name": "c", "resourceVersion": "9"}, "data": {"a": "1"}}
    with pytest.raises(ApiError) as raised:
        build_table([cm], columns, "Everything", None, NOW)
    assert raised.value.code == 400 and raised.value.message == 'unrecognized includeObject value: "Everything"'
    table = build_table(cm, columns, "", {"resourceVersion": "10", "continue": "tok", "remainingItemCount": 4}, NOW)
    assert table["metadata"] == {"resourceVersion": "10", "continue": "tok", "remainingItemCount": 4}
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert build_table([cm], columns, None, None, NOW, no_headers=True)["columnDefinitions"] is None


# -- built-in printers --------------------------------------------------------------------------------------

def meta(name, **extra):
    metadata = {"name": name, "namespace": "default", "creationTimestamp": FIVE_MINUTES_AGO}
    metadata.update(extra)
    return metadata


def row(group, resource, obj):
    columns = columns_for_builtin(group, resource)
    table = build_table([obj], columns, None, {}, NOW)
    return [d["name"] for d in table["columnDefinitions"]], table["rows"][0]


def running(name, ready=True, restarts=0, finished=None):
    status = {"name": name, "ready": ready, "restartCount": restarts, "state": {"running": {}}}
    if finished:
        status["lastState"] = {"terminated": {"finishedAt": finished, "exitCode": 1}}
    return status


POD_COLUMNS = ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"]


@pytest.mark.parametrize("spec, status, deleting, cells", [
    ({"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
     {"phase": "Running", "podIPs": [{"ip": "10.1.0.4"}],
      "containerStatuses": [running("a"), running("b", ready=False)]},
     False, ["p", "1/2", "Running", "0", "5m", "10.1.0.4", "n1", "<none>", "<none>"]),
    ({"containers": [{"name": "a"}]},
     {"phase": "Running", "containerStatuses": [
         {"name": "a", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
          "lastState": {"terminated": {"finishedAt": "2023-11-14T22:11:20Z", "exitCode": 1}}}]},
     False, ["p", "0/1", "CrashLoopBackOff", "3 (2m ago)", "5m", "<none>", "<none>", "<none>", "<none>"]),
    ({"containers": [{"name": "a"}], "initContainers": [{"name": "init"}]},
     {"phase": "Pending", "initContainerStatuses": [{"name": "init", "state": {"running": {}}}]},
     False, ["p", "0/1", "Init:0/1", "0", "5m", "<none>", "<none>", "<none>", "<none>"]),
    ({"containers": [{"name": "a"}], "initContainers": [{"name": "init"}]},
     {"phase": "Pending", "initContainerStatuses": [
         {"name": "init", "state": {"terminated": {"exitCode": 2}}}]},
     False, ["p", "0/1", "Init:ExitCode:2", "0", "5m", "<none>", "<none>", "<none>", "<none>"]),
    ({"containers": [{"name": "a"}], "initContainers": [{"name": "sidecar", "restartPolicy": "Always"}]},
     {"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}],
      "initContainerStatuses": [{"name": "sidecar", "started": True, "ready": True, "state": {"running": {}}}],
      "containerStatuses": [running("a")]},
     False, ["p", "2/2", "Running", "0", "5m", "<none>", "<none>", "<none>", "<none>"]),
    ({"containers": [{"name": "a"}]},
     {"phase": "Succeeded", "containerStatuses": [
         {"name": "a", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]},
     False, ["p", "0/1", "Completed", "0", "5m", "<none>", "<none>", "<none>", "<none>"]),
    ({"containers": [{"name": "a"}]}, {"phase": "Running", "containerStatuses": [running("a")]},
     True, ["p", "1/1", "Terminating", "0", "5m", "<none>", "<none>", "<none>", "<none>"]),
    ({"containers": [{"name": "a"}], "readinessGates": [{"conditionType": "x/ok"}, {"conditionType": "x/lb"}]},
     {"phase": "Running", "conditions": [{"type": "x/ok", "status": "True"}], "nominatedNodeName": "n2"},
     False, ["p", "0/1", "Running", "0", "5m", "<none>", "<none>", "n2", "1/2"]),
    ({"containers": [{"name": "a"}]},
     {"phase": "Pending", "conditions": [{"type": "PodScheduled", "reason": "SchedulingGated"}]},
     False, ["p", "0/1", "SchedulingGated", "0", "5m", "<none>", "<none>", "<none>", "<none>"]),
])
def test_pod_printer(spec, status, deleting, cells):
    metadata = meta("p", deletionTimestamp=FIVE_MINUTES_AGO) if deleting else meta("p")
    names, pod_row = row("", "pods", {"metadata": metadata, "spec": spec, "status": status})
    assert names == POD_COLUMNS
    assert pod_row["cells"] == cells


def test_completed_pod_rows_carry_the_completed_condition():
    _definitions, pod_row = row("", "pods", {"metadata": meta("p"), "spec": {"containers": []}, "status": {"phase": "Failed"}})
    assert pod_row["conditions"] == [{"type": "Completed", "status": "True", "reason": "Failed",
                                      "message": "The pod failed."}]


def test_deployment_printer():
    deployment = {"metadata": meta("web"), "spec": {
        "replicas": 3, "selector": {"matchLabels": {"app": "web"},
                                    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]},
        "template": {"spec": {"containers": [{"name": "app", "image": "nginx:1"}, {"name": "log", "image": "busybox"}]}}},
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    names, deployment_row = row("apps", "deployments", deployment)
    assert names == ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]
    assert deployment_row["cells"] == ["web", "2/3", 3, 2, "5m", "app,log", "nginx:1,busybox", "app=web,tier in (a,b)"]
    assert row("apps", "deployments", {"metadata": meta("d"), "spec": {}})[1]["cells"][1:4] == ["0/1", 0, 0]


@pytest.mark.parametrize("spec, status, cells", [
    ({"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
      "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}], "selector": {"k8s-app": "dns"}},
     {}, ["s", "ClusterIP", "10.96.0.10", "<none>", "53/UDP,53/TCP", "5m", "k8s-app=dns"]),
    ({"type": "NodePort", "clusterIPs": ["10.96.0.11"], "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}],
      "externalIPs": ["198.51.100.1"]}, {}, ["s", "NodePort", "10.96.0.11", "198.51.100.1", "80:30080/TCP", "5m",
                                             "<none>"]),
    ({"type": "LoadBalancer", "clusterIPs": ["10.96.0.12"], "ports": [{"port": 443, "nodePort": 31443}]}, {},
     ["s", "LoadBalancer", "10.96.0.12", "<pending>", "443:31443/TCP", "5m", "<none>"]),
    ({"type": "LoadBalancer", "clusterIP": "None", "ports": []},
     {"loadBalancer": {"ingress": [{"ip": "203.0.113.2"}, {"hostname": "lb.example.com"}]}},
     ["s", "LoadBalancer", "None", "203.0.113.2,lb.example.com", "<none>", "5m", "<none>"]),
    ({"type": "ExternalName", "externalName": "db.example.com"}, {},
     ["s", "ExternalName", "<none>", "db.example.com", "<none>", "5m", "<none>"]),
])
def test_service_printer(spec, status, cells):
    names, service_row = row("", "services", {"metadata": meta("s"), "spec": spec, "status": status})
    assert names == ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]
    assert service_row["cells"] == cells


def test_event_printer():
    event = {"metadata": meta("web.17"), "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.c"},
             "reason": "Pulled", "type": "Normal", "message": " pulled image \n", "count": 4,
             "firstTimestamp": "2023-11-14T21:13:20Z", "lastTimestamp": "2023-11-14T22:12:20Z",
             "source": {"component": "kubelet", "host": "node-1"}}
    names, event_row = row("", "events", event)
    assert names == ["Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count",
                     "Name"]
    assert event_row["cells"] == ["60s", "Normal", "Pulled", "pod/web", "spec.c", "kubelet, node-1", "pulled image",
                                  "60m", 4, "web.17"]
    new_style = {"metadata": meta("e"), "involvedObject": {"kind": "Node"}, "eventTime": "2023-11-14T22:13:00.000000Z",
                 "reportingComponent": "ctrl", "series": {"count": 7, "lastObservedTime": "2023-11-14T22:13:10.000000Z"}}
    assert row("", "events", new_style)[1]["cells"] == ["10s", "", "", "node", "", "ctrl", "", "20s", 7, "e"]
    singleton = {"metadata": meta("e"), "involvedObject": {}}
    assert row("", "events", singleton)[1]["cells"][0] == "<unknown>"
    assert row("", "events", singleton)[1]["cells"][8] == 1


@pytest.mark.parametrize("group, resource, obj, names, cells", [
    ("", "namespaces", {"metadata": meta("ns"), "status": {"phase": "Active"}}, ["Name", "Status", "Age"],
     ["ns", "Active", "5m"]),
    ("", "configmaps", {"metadata": meta("c"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}},
     ["Name", "Data", "Age"], ["c", 3, "5m"]),
    ("", "secrets", {"metadata": meta("s"), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}},
     ["Name", "Type", "Data", "Age"], ["s", "kubernetes.io/tls", 2, "5m"]),
    ("", "serviceaccounts", {"metadata": meta("sa"), "secrets": [{"name": "x"}]}, ["Name", "Secrets", "Age"],
     ["sa", 1, "5m"]),
    ("coordination.k8s.io", "leases", {"metadata": meta("l"), "spec": {"holderIdentity": "pod-a_1"}},
     ["Name", "Holder", "Age"], ["l", "pod-a_1", "5m"]),
    ("coordination.k8s.io", "leases", {"metadata": meta("l"), "spec": {}}, ["Name", "Holder", "Age"], ["l", "", "5m"]),
    ("rbac.authorization.k8s.io", "roles", {"metadata": meta("r", creationTimestamp="2023-11-14T22:08:20Z")},
     ["Name", "Created At"], ["r", "2023-11-14T22:08:20Z"]),
    ("rbac.authorization.k8s.io", "clusterroles", {"metadata": {"name": "cr"}}, ["Name", "Created At"],
     ["cr", "0001-01-01T00:00:00Z"]),
    ("rbac.authorization.k8s.io", "rolebindings",
     {"metadata": meta("rb"), "roleRef": {"kind": "ClusterRole", "name": "view"},
      "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
                   {"kind": "ServiceAccount", "name": "ci", "namespace": "build"}, {"kind": "User", "name": "bob"}]},
     ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"],
     ["rb", "ClusterRole/view", "5m", "alice, bob", "devs", "build/ci"]),
    ("rbac.authorization.k8s.io", "clusterrolebindings",
     {"metadata": meta("crb"), "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"}},
     ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"], ["crb", "ClusterRole/cluster-admin", "5m", "", "", ""]),
    ("apiextensions.k8s.io", "customresourcedefinitions", {"metadata": meta("machines.cluster.x-k8s.io")},
     ["Name", "Created At"], ["machines.cluster.x-k8s.io", "2023-11-14T22:08:20Z"]),
])
def test_simple_builtin_printers(group, resource, obj, names, cells):
    column_names, printed = row(group, resource, obj)
    assert (column_names, printed["cells"]) == (names, cells)


def test_priority_columns_are_marked_for_kubectl_wide():
    priorities = {d["name"]: d["priority"] for d in columns_for_builtin("", "pods").definitions}
    assert priorities == {"Name": 0, "Ready": 0, "Status": 0, "Restarts": 0, "Age": 0, "IP": 1, "Node": 1,
                          "Nominated Node": 1, "Readiness Gates": 1}
    assert columns_for_builtin("rbac.authorization.k8s.io", "roles").definitions[1]["type"] == "date"


def test_build_table_does_not_mutate_objects():
    pod = {"metadata": meta("p"), "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Running"}}
    before = copy.deepcopy(pod)
    build_table([pod], columns_for_builtin("", "pods"), "Object", None, NOW)
    assert pod == before
