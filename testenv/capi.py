"""The real Cluster API controllers for end-to-end tests: the core manager and the Docker provider (CAPD) with its
in-memory backend, built from upstream by testenv/cluster/build.py, run as local processes with a kubeconfig,
either straight at kube-apiserver or through capi_proxy as the sidecar runs it.

    controllers = Controllers(workdir)            # builds or finds capi-manager and capd-manager
    controllers.start(kubeconfig)                 # both managers; waits until their health endpoints answer
    objects = workload_cluster("ns", "wl", workers=2)
    ...
    controllers.stop()

The CRDs come from the Go module cache at the pinned version (`crd_documents()`), labelled with their CAPI contract
as each provider's kustomize does; the core ones convert through HyperShift's /convert stand-in
(testenv/cluster/convert.py), as a HyperShift management cluster installs them.

What the in-memory backend needs and does (measured with v1.14.2):
* a standalone control-plane Machine: the workload cluster's simulated API server starts with its "kube-apiserver
  Pod", and the core manager cannot reach a workload cluster without it;
* `<cluster>-ca` and `<cluster>-etcd` Secrets (no control plane provider makes them) and a bootstrap data Secret;
* an annotation on the DevCluster (v1.14.2 writes into a nil annotations map otherwise and panics);
* a MachineDeployment's rollout strategy spelled out: the defaulting webhook that would fill it is not registered
  (HyperShift does not register CAPI's webhooks either; its NodePool controller writes the strategy);
* one CAPD per machine: it listens on fixed ports (19000, and 20000 upwards for the workload API servers), so
  Controllers holds a file lock while CAPD runs and other test workers wait for it.
"""
import base64
import copy
import datetime
import fcntl
import os
import subprocess
import tempfile
import time
import urllib.request

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import sidecar
from testenv import certs, yamlio
from testenv.cluster import build
from testenv.cluster.cluster import die_with_parent, free_port, terminate
from testenv.cluster.convert import WEBHOOK_PLACEHOLDER
from testenv.hcp import fleet

CORE_MODULE = "sigs.k8s.io/cluster-api"
TEST_MODULE = "sigs.k8s.io/cluster-api/test"
CORE_CRDS = "core/config/crd/bases"
PROVIDER_CRDS = "infrastructure/docker/config/crd/bases"


class Release(object):
    """A pair of managers: the API version its controllers read and write, their binaries, the go/<moddir> that pins
    them, and the contract labels CAPD's config/crd/kustomization.yaml gives its CRDs (the core reads them by)."""

    def __init__(self, api, binaries, moddir, contract_labels):
        self.api = api
        self.binaries = dict(zip(("capi-manager", "capd-manager"), binaries))
        self.moddir = moddir
        self.contract_labels = contract_labels


RELEASES = {
    # v1.14: the controllers are cluster.x-k8s.io/v1beta2 clients
    "v1beta2": Release("v1beta2", build.CAPI_BINARIES, "capi",
                       {"cluster.x-k8s.io/v1beta1": "v1beta1", "cluster.x-k8s.io/v1beta2": "v1beta2"}),
    # v1.10: the last release whose controllers are v1beta1 clients; its CAPD serves v1beta1 only
    "v1beta1": Release("v1beta1", build.CAPI_V1BETA1_BINARIES, "capi-v1beta1", {"cluster.x-k8s.io/v1beta1": "v1beta1"}),
}
KUBERNETES_VERSION = "v1.34.4"
LOCK_PATH = os.path.join(tempfile.gettempdir(), "testenv-capd.lock")
START_TIMEOUT = 60.0
# Readiness of the in-memory machines: short, so a Machine runs within seconds of its creation
IN_MEMORY_PROVISIONING = {"vm": {"provisioning": {"startupDuration": "2s"}},
                          "node": {"provisioning": {"startupDuration": "1s"}},
                          "apiServer": {"provisioning": {"startupDuration": "1s"}},
                          "etcd": {"provisioning": {"startupDuration": "1s"}}}


def crd_documents(conversion_webhook=True, release="v1beta2"):
    """The CRDs of the core manager and of CAPD from the Go module cache (the versions go/capi*/go.mod pin).

    The core CRDs are always v1.14's, as a HyperShift management cluster installs them (v1beta2 stored, v1beta1 still
    served); with conversion_webhook they convert through convert.WEBHOOK_PLACEHOLDER (start_cluster wires the
    /convert stand-in in). The provider's come with the release's CAPD and carry its contract labels."""
    documents = []
    for module, moddir, folder, labels in ((CORE_MODULE, "capi", CORE_CRDS, None),
                                           (TEST_MODULE, RELEASES[release].moddir, PROVIDER_CRDS,
                                            RELEASES[release].contract_labels)):
        directory = build.module_dir(module, moddir) / folder
        for path in sorted(directory.glob("*.yaml")):
            crd = yamlio.load(path.read_text())
            if labels:
                crd["metadata"].setdefault("labels", {}).update(labels)
            elif conversion_webhook and len(crd["spec"]["versions"]) > 1:
                crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
                    "conversionReviewVersions": ["v1"], "clientConfig": {"url": WEBHOOK_PLACEHOLDER}}}
            documents.append(crd)
    return documents


def _rsa_ca(common_name):
    """(cert PEM, key PEM) of a self-signed RSA CA, as kubeadm makes the cluster and etcd CAs."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem.decode()


def _secret(namespace, name, cluster, data, secret_type="cluster.x-k8s.io/secret"):
    return {"apiVersion": "v1", "kind": "Secret", "type": secret_type,
            "metadata": {"name": name, "namespace": namespace, "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
            "stringData": data}


def workload_cluster(namespace, name, workers=2, api="v1beta2"):
    """The objects of a workload cluster on CAPD's in-memory backend, as a client of `api` writes them (a v1beta2 one:
    refs by apiGroup, rollout.strategy; a v1beta1 one, CAPI v1.10 or older: refs by apiVersion and namespace,
    strategy): a Cluster and its DevCluster, one standalone control-plane Machine, a MachineDeployment of `workers`
    with its DevMachineTemplate, and the Secrets a control plane provider would otherwise make."""
    labels = {"cluster.x-k8s.io/cluster-name": name}
    md_labels = dict(labels, **{"cluster.x-k8s.io/deployment-name": name + "-md-0"})
    infra = "infrastructure.cluster.x-k8s.io/" + api

    def ref(kind, ref_name):
        if api == "v1beta1":
            return {"apiVersion": infra, "kind": kind, "name": ref_name, "namespace": namespace}
        return {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": kind, "name": ref_name}

    def machine_spec(infrastructure_ref):
        return {"clusterName": name, "version": KUBERNETES_VERSION,
                "bootstrap": {"dataSecretName": name + "-bootstrap"}, "infrastructureRef": infrastructure_ref}

    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    strategy = {"strategy": rolling} if api == "v1beta1" else {"rollout": {"strategy": rolling}}
    objects = [_secret(namespace, name + "-%s" % part, name, dict(zip(("tls.crt", "tls.key"), _rsa_ca(name + "-" + part))))
               for part in ("ca", "etcd")]
    objects.append(_secret(namespace, name + "-bootstrap", name, {"format": "cloud-config", "value": "#cloud-config\n"}))
    objects += [
        {"apiVersion": "cluster.x-k8s.io/" + api, "kind": "Cluster", "metadata": {"name": name, "namespace": namespace},
         "spec": {"clusterNetwork": {"services": {"cidrBlocks": ["10.128.0.0/12"]},
                                     "pods": {"cidrBlocks": ["192.168.0.0/16"]}, "serviceDomain": "cluster.local"},
                  "infrastructureRef": ref("DevCluster", name)}},
        {"apiVersion": infra, "kind": "DevCluster",
         "metadata": {"name": name, "namespace": namespace, "annotations": {"testenv/capd": "in-memory"}},
         "spec": {"backend": {"inMemory": {}}}},
        {"apiVersion": "cluster.x-k8s.io/" + api, "kind": "Machine",
         "metadata": {"name": name + "-cp-0", "namespace": namespace,
                      "labels": dict(labels, **{"cluster.x-k8s.io/control-plane": ""})},
         "spec": machine_spec(ref("DevMachine", name + "-cp-0"))},
        {"apiVersion": infra, "kind": "DevMachine", "metadata": {"name": name + "-cp-0", "namespace": namespace},
         "spec": {"backend": {"inMemory": copy.deepcopy(IN_MEMORY_PROVISIONING)}}},
        {"apiVersion": infra, "kind": "DevMachineTemplate", "metadata": {"name": name + "-worker", "namespace": namespace},
         "spec": {"template": {"spec": {"backend": {"inMemory": copy.deepcopy(IN_MEMORY_PROVISIONING)}}}}},
        {"apiVersion": "cluster.x-k8s.io/" + api, "kind": "MachineDeployment",
         "metadata": {"name": name + "-md-0", "namespace": namespace},
         # two dicts: a label added to the template alone must not land in the selector too
         "spec": dict(strategy, clusterName=name, replicas=workers, selector={"matchLabels": dict(md_labels)},
                      template={"metadata": {"labels": dict(md_labels)},
                                "spec": machine_spec(ref("DevMachineTemplate", name + "-worker"))})},
    ]
    return objects


class Manager(object):
    """One manager process (capi-manager or capd-manager) with its log file."""

    def __init__(self, name, command, log_path, health_url, env=None):
        self.name = name
        self.log_path = log_path
        self.health_url = health_url
        with open(log_path, "ab") as log:
            log.write(("--- %s %s\n" % (time.strftime("%H:%M:%S"), " ".join(command))).encode())
            log.flush()
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                            preexec_fn=die_with_parent)

    def healthy(self):
        try:
            with urllib.request.urlopen(self.health_url, timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def stop(self):
        return terminate(self.process)


MANAGERS = ("capi-manager", "capd-manager")
# POD_IP: CAPD hosts each workload cluster's simulated API server there
MANAGER_ENV = {"capi-manager": {}, "capd-manager": {"POD_IP": "127.0.0.1"}}


class Controllers(object):
    """capi-manager and capd-manager as local processes. start(kubeconfig) after stop() moves them, for example
    from the API server to the proxy; each can be started and stopped alone (names=...). Logs accumulate in
    <workdir>/<name>.log across starts, one header line per start."""

    def __init__(self, workdir, release="v1beta2"):
        self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.release = RELEASES[release]
        found = build.ensure_binaries(self.release.binaries.values())
        self.binaries = {name: found[binary] for name, binary in self.release.binaries.items()}
        self.cert_dir = os.path.join(self.workdir, "webhook-certs")
        os.makedirs(self.cert_dir, exist_ok=True)
        material = certs.generate()  # the managers refuse to start without a serving certificate
        for file_name, pem in (("tls.crt", material["cert"]), ("tls.key", material["key"])):
            with open(os.path.join(self.cert_dir, file_name), "w") as handle:
                handle.write(pem)
        self.managers = {}
        self._lock = None

    def log_path(self, name):
        return os.path.join(self.workdir, name + ".log")

    def start(self, kubeconfig, names=MANAGERS, timeout=START_TIMEOUT):
        """Start the named managers with kubeconfig and wait until their health endpoints answer."""
        running = [name for name in names if name in self.managers]
        if running:
            raise RuntimeError("%s running; stop() first" % ", ".join(running))
        if self._lock is None:  # CAPD's fixed ports: one at a time on this machine
            self._lock = open(LOCK_PATH, "w")
            fcntl.flock(self._lock, fcntl.LOCK_EX)
        for name in names:
            health = free_port()
            command = [self.binaries[name], "--kubeconfig", kubeconfig, "--leader-elect=false",
                       "--webhook-port", str(free_port()), "--webhook-cert-dir", self.cert_dir,
                       "--health-addr", "127.0.0.1:%d" % health,
                       "--diagnostics-address", "127.0.0.1:%d" % free_port(), "--insecure-diagnostics"]
            self.managers[name] = Manager(name, command, self.log_path(name), "http://127.0.0.1:%d/healthz" % health,
                                          dict(os.environ, **MANAGER_ENV[name]))
        deadline = time.monotonic() + timeout
        for name in names:
            manager = self.managers[name]
            while not manager.healthy():
                if manager.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("%s did not become healthy (exit %s); its log: %s\n%s"
                                       % (name, manager.process.poll(), manager.log_path, self.log(name)[-3000:]))
                time.sleep(0.2)
        return self

    def stop(self, names=MANAGERS):
        """SIGTERM the named managers (SIGKILL after a grace period); returns their exit codes."""
        return [self.managers.pop(name).stop() for name in names if name in self.managers]

    def close(self):
        self.stop()
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def log(self, name):
        try:
            with open(self.log_path(name), errors="replace") as handle:
                return handle.read()
        except FileNotFoundError:
            return ""


SIDECAR = sidecar.CONTAINER_NAME  # the container the api_proxy role puts in
# HyperShift's Deployments of the managers (the images' names: node_images side-loads them)
HCP_DEPLOYMENTS = {"cluster-api": "capi-manager", "capi-provider": "capd-manager"}
# The leases the managers elect their leader with (core/main.go, test/infrastructure/docker/main.go LeaderElectionID)
LEADER_LEASES = {"cluster-api": "controller-leader-election-capi", "capi-provider": "controller-leader-election-capd"}
# HyperShift's leader election for its CAPI managers (control-plane-operator/controllers/hostedcontrolplane/v2/assets/
# cluster-api/deployment.yaml): one replica, a lease of 137 s renewed within 107 s, tried every 26 s. CAPI v1.14.2 sets
# no LeaderElectionReleaseOnCancel: a manager that stops leaves its lease to expire, it does not hand it over.
LEADER_ELECTION_ARGS = ["--leader-elect=true", "--leader-elect-lease-duration=137s", "--leader-elect-retry-period=26s",
                        "--leader-elect-renew-deadline=107s"]
# capi_manager/deployment.go adds these for the releases that run CAPI 1.14 (the provider's the same phases here)
CORE_ARGS = ["--feature-gates=MachineSetPreflightChecks=false"]
CRD_MIGRATION_ARGS = ["--skip-crd-migration-phases=StorageVersionMigration",
                      "--skip-crd-migration-phases=CleanupManagedFields"]
# Every namespace: the managers here watch every namespace, with HyperShift's rules in ClusterRoles, because v1.14.2's
# MachineDeployment controller fails every reconcile under --namespace (util/controller/consistency.go casts the
# informer of controller-runtime's multi-namespace cache: "failed to cast MachineSet informer to SharedIndexInformer").
WEBHOOK_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"  # the managers' default --webhook-cert-dir
HEALTH_PORT = 9440


def node_images(objects, release="v1beta2", managers=tuple(HCP_DEPLOYMENTS), placeholders=()):
    """The image archives a real node (start_cluster(pods="node", node_images=...)) needs for objects: the managers'
    binaries as the images of the Deployments `managers` (cluster-api, capi-provider), the proxy image the roles
    deploy, and a placeholder (testenv.cluster.images) under the name of every other Deployment's image and of
    `placeholders` (the images of containers a test adds)."""
    from testenv.cluster import images  # pylint: disable=import-outside-toplevel
    chosen = RELEASES[release]
    if managers:
        build.ensure_binaries(chosen.binaries[HCP_DEPLOYMENTS[deployment]] for deployment in managers)
    managers = {fleet.component_image(deployment): chosen.binaries[HCP_DEPLOYMENTS[deployment]]
                for deployment in managers}
    containers = [container for obj in objects if obj["kind"] == "Deployment"
                  for container in obj["spec"]["template"]["spec"]["containers"] if container["image"] not in managers]
    others = [container["image"] for container in containers] + list(placeholders)
    commands = [container["command"][0] for container in containers if container.get("command")]
    return ([images.proxy_archive()] + [images.binary_image(binary, image) for image, binary in sorted(managers.items())]
            + ([images.placeholder_archive(others, commands)] if others else []))


def _manager_container(image, extra_args, extra_env):
    """The container `manager` as HyperShift's cluster-api Deployment has it: its args, env, probes and the webhook
    serving certificate (assets/cluster-api/deployment.yaml)."""
    probe = {"httpGet": {"path": "/healthz", "port": HEALTH_PORT, "scheme": "HTTP"}, "timeoutSeconds": 5}
    namespace = {"name": "MY_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}}
    return {"name": "manager", "image": image,
            # HyperShift adds --namespace $(MY_NAMESPACE); v1.14.2 cannot run with it (every namespace, above)
            "args": ["--v=4"] + LEADER_ELECTION_ARGS + CRD_MIGRATION_ARGS + extra_args,
            "env": [namespace] + extra_env,
            "livenessProbe": dict(probe, initialDelaySeconds=60, periodSeconds=60, failureThreshold=5),
            "readinessProbe": dict(probe, httpGet=dict(probe["httpGet"], path="/readyz"), periodSeconds=10,
                                   failureThreshold=3),
            "volumeMounts": [{"mountPath": WEBHOOK_CERT_DIR, "name": "webhooks-tls", "readOnly": True}]}


def hypershift_managers(objects, namespace):
    """objects (an HCP namespace of testenv.hcp.fleet) with the CAPI managers as HyperShift runs them: the Deployments
    cluster-api and capi-provider with the container above (the provider's gets POD_IP, where CAPD's in-memory backend
    serves the workload clusters' API servers), RollingUpdate 25%/25%; their webhook serving Secrets; the rules of their
    Roles as HyperShift's (assets/cluster-api/role.yaml, assets/capi-provider/role.yaml, in place of the fixture's one
    Role), cluster-wide (every namespace, above); and the ClusterRole on CRDs the HyperShift operator binds both
    ServiceAccounts to (reconcileCAPIManagerClusterRole)."""
    capi_groups = ["bootstrap.cluster.x-k8s.io", "controlplane.cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io",
                   "machines.cluster.x-k8s.io", "exp.infrastructure.cluster.x-k8s.io", "addons.cluster.x-k8s.io",
                   "exp.cluster.x-k8s.io", "cluster.x-k8s.io"]
    everything = {"resources": ["*"], "verbs": ["*"]}
    rules = {"cluster-api": [dict(everything, apiGroups=capi_groups),
                             {"apiGroups": ["hypershift.openshift.io"],
                              "resources": ["hostedcontrolplanes", "hostedcontrolplanes/status"],
                              "verbs": ["get", "list", "watch", "delete", "patch", "update"]},
                             {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list", "watch"]},
                             # the workload cluster's kubeconfig Secret: HyperShift's control-plane operator writes it,
                             # here (no control plane provider) the core manager does
                             {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "update", "patch"]},
                             {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "update", "patch"]},
                             dict(everything, apiGroups=["coordination.k8s.io"], resources=["leases"])],
             "capi-provider": [dict(everything, apiGroups=[""], resources=["events", "secrets", "configmaps"]),
                               dict(everything, apiGroups=capi_groups),
                               dict(everything, apiGroups=["hypershift.openshift.io"]),
                               dict(everything, apiGroups=["coordination.k8s.io"], resources=["leases"])]}
    pod_ip = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}]
    result = []
    for obj in objects:
        name = obj["metadata"]["name"]
        if obj["kind"] in ("Role", "RoleBinding") and name == "cluster-api":
            continue  # the fixture's one Role of both managers: HyperShift's two follow
        if obj["kind"] == "Deployment" and name in HCP_DEPLOYMENTS:
            obj = copy.deepcopy(obj)
            spec = obj["spec"]
            spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
            pod = spec["template"]["spec"]
            image = pod["containers"][0]["image"]
            pod["containers"] = [_manager_container(image, CORE_ARGS if name == "cluster-api" else [],
                                                    [] if name == "cluster-api" else pod_ip)]
            pod["volumes"] = [{"name": "webhooks-tls", "secret": {"secretName": name + "-webhooks-tls",
                                                                  "defaultMode": 0o640}}]
            # the group OpenShift's restricted SCC gives the Pod on admission: the managers' images run as a non-root
            # user, which reads the 0640 serving certificate through it
            pod["securityContext"] = {"fsGroup": 65532}
        result.append(obj)
    material = certs.generate()  # the managers refuse to start without a serving certificate
    for name in HCP_DEPLOYMENTS:
        result.append({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                       "metadata": {"name": name + "-webhooks-tls", "namespace": namespace},
                       "data": {"tls.crt": base64.b64encode(material["cert"].encode()).decode(),
                                "tls.key": base64.b64encode(material["key"].encode()).decode()}})
        role = "%s-%s" % (name, namespace)  # HyperShift's Role's rules, cluster-wide
        result.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": role}, "rules": rules[name]})
        result.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                       "metadata": {"name": role},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                       "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]})
    cluster_role = "cluster-api-crds-" + namespace
    result.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": cluster_role},
                   "rules": [{"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
                              "verbs": ["get", "list", "watch"]}]})
    result.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": cluster_role},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
                   "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}
                                for name in HCP_DEPLOYMENTS]})
    return result


# A core manager that elects its leader and reconciles nothing: no object of a fixture carries this value of the label
# cluster.x-k8s.io/watch-filter, so every controller's predicate drops every event (core/main.go --watch-filter).
ELECT_ONLY_ARGS = ["--watch-filter=private-capi-elect-only"]


def electing_core_manager(deployment, namespace, leader_args=LEADER_ELECTION_ARGS):
    """The objects that make a fixture's Deployment cluster-api (testenv.hcp.fleet's) run the real core manager
    v1.14.2 as HyperShift runs it (hypershift_managers: its args, probes, serving certificate and RBAC; node_images
    has its image), electing its leader with leader_args (HyperShift's by default) in the Lease LEADER_LEASES["cluster-api"]
    of namespace, and reconciling nothing of the fixture (ELECT_ONLY_ARGS): what the leader handover needs of a
    manager - a real client-go leader election that gives no Lease back when it stops - without its controllers
    touching the fixture's objects (KWOK's Machines, HyperShift's providers that do not run here)."""
    objects = hypershift_managers([deployment], namespace)
    for obj in objects:
        if obj["kind"] == "Deployment":
            container = obj["spec"]["template"]["spec"]["containers"][0]
            container["args"] = ([arg for arg in container["args"] if arg not in LEADER_ELECTION_ARGS]
                                 + list(leader_args) + ELECT_ONLY_ARGS)
    return objects


def run_electing_core_manager(server, namespace, leader_args=LEADER_ELECTION_ARGS):
    """The live Deployment cluster-api of namespace (server: testenv's RealServer) turned into electing_core_manager's
    through the API: the Deployment replaced (a rollout), its Secret and RBAC created. Its Pods run the manager where
    the server's node has node_images(managers=("cluster-api",)) and every core CAPI CRD HyperShift installs
    (testenv.hcp.build.all_core_crds: the manager does not start without them)."""
    path = "/apis/apps/v1/namespaces/%s/deployments/cluster-api" % namespace
    for obj in electing_core_manager(server.request("GET", path).json(), namespace, leader_args):
        kind, metadata = obj["kind"], obj["metadata"]
        if kind == "Deployment":
            answer = server.request("PUT", path, obj)
            while answer.status == 409:  # its status moved on since the read: read it again
                obj = [each for each in electing_core_manager(server.request("GET", path).json(), namespace,
                                                              leader_args) if each["kind"] == "Deployment"][0]
                answer = server.request("PUT", path, obj)
        else:
            plural = {"Secret": "/api/v1/namespaces/%s/secrets" % namespace,
                      "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                      "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"}[kind]
            answer = server.request("POST", plural, obj)
        if answer.status not in (200, 201, 409):  # 409 of a POST: there already (another namespace's run made it)
            raise RuntimeError("%s %s: %s %s" % (kind, metadata["name"], answer.status, answer.body[:500]))


def lease_holder_pod(server, namespace, lease):
    """The Pod name in the holder identity of a Lease ("" when it has none or does not exist)."""
    answer = server.request("GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (namespace, lease))
    holder = ((answer.json().get("spec") or {}).get("holderIdentity") or "") if answer.status == 200 else ""
    return holder.split("_", 1)[0]
