"""Controllers: CRD names/establishment and cleanup, garbage collector, namespace lifecycle, a Deployment
controller (pods owned directly by the Deployment, no ReplicaSet) and a minimal kubelet (graceful pod deletion).

They react to the store's event stream in one asyncio task; writes go through ObjectApi like a client's.
"""
import asyncio
import base64
import hashlib
import logging
import random

from . import errors, wiring
from .api import FINALIZER_FOREGROUND, FINALIZER_ORPHAN, GENERATE_CHARS, WriteOptions, clone, now_rfc3339
from .store import ADDED, DELETED

LOG = logging.getLogger("kubeapi.controllers")
CRD_GR = ("apiextensions.k8s.io", "customresourcedefinitions")
CRD_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
NS_GR = ("", "namespaces")
POD_GR = ("", "pods")
DEPLOY_GR = ("apps", "deployments")
CLUSTER_ROLE_GR = ("rbac.authorization.k8s.io", "clusterroles")
AGGREGATION_MANAGER = "clusterrole-aggregation-controller"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
SYSTEM_MANAGER = "kube-controller-manager"


def _system_options():
    return WriteOptions(field_manager=SYSTEM_MANAGER, field_validation="Ignore",
                        user=wiring.make_user("system:kube-controller-manager", ["system:authenticated"]))


def pod_template_hash(template):
    digest = hashlib.sha256(repr(sorted(_flatten(template))).encode()).digest()
    return "".join(GENERATE_CHARS[b % len(GENERATE_CHARS)] for b in digest[:10])


def _flatten(value, prefix=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(item, prefix + "." + key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _flatten(item, "%s[%d]" % (prefix, index))
    else:
        yield (prefix, repr(value))


class Controllers:
    def __init__(self, server):
        self.server = server
        self.store = server.store
        self.queue = asyncio.Queue()
        self.uid_index = {}          # uid -> (group_resource, namespace, name)
        self.dependents = {}         # owner uid -> {(group_resource, namespace, name)}
        self._tasks = set()
        self._loop_task = None
        self._busy_namespaces = set()
        self._busy_crds = set()
        self._deployment_timers = {}
        self._aggregation_pending = False

    @property
    def api(self):
        return self.server.api

    @property
    def options(self):
        return self.server.options

    # --- synchronous hooks from ObjectApi ---------------------------------------------------------
    def before_create(self, rtype, obj):
        if rtype.group_resource == CRD_GR:
            finalizers = obj["metadata"].setdefault("finalizers", [])
            if CRD_FINALIZER not in finalizers:
                finalizers.append(CRD_FINALIZER)

    def after_write(self, rtype, old, new):
        if rtype.group_resource == CRD_GR and not new["metadata"].get("deletionTimestamp"):
            self.establish_crd(new)

    def after_delete(self, rtype, final):
        if rtype.group_resource == CRD_GR:
            self.server.registry.unregister_crd(final["metadata"]["name"])

    def establish_crd(self, crd):
        """Serve a CRD's resources and set NamesAccepted/Established like the apiextensions controllers."""
        registry = self.server.registry
        conflict = registry.crd_conflicts(crd)
        spec = crd.get("spec") or {}
        names = dict(spec.get("names") or {})
        names.setdefault("singular", names.get("kind", "").lower())
        names.setdefault("listKind", names.get("kind", "") + "List")
        now = now_rfc3339()
        if conflict:
            conditions = [
                {"type": "NamesAccepted", "status": "False", "reason": "NameConflict", "message": conflict,
                 "lastTransitionTime": now},
                {"type": "Established", "status": "False", "reason": "NotAccepted",
                 "message": "not all names are accepted", "lastTransitionTime": now}]
        else:
            registry.register_crd(crd)
            conditions = [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found",
                 "lastTransitionTime": now},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted", "lastTransitionTime": now}]
        status = dict(crd.get("status") or {})
        old_conditions = {c["type"]: c for c in status.get("conditions") or []}
        merged = []
        for condition in conditions:
            previous = old_conditions.get(condition["type"])
            if previous and previous.get("status") == condition["status"]:
                condition = dict(condition, lastTransitionTime=previous.get("lastTransitionTime", now))
            merged.append(condition)
        storage = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
        stored_versions = list(status.get("storedVersions") or [])
        for name in storage:
            if name not in stored_versions:
                stored_versions.append(name)
        new_status = {"conditions": merged, "acceptedNames": names if not conflict else
                      status.get("acceptedNames", {"plural": "", "kind": ""}), "storedVersions": stored_versions}
        if new_status != crd.get("status"):
            updated = clone(crd)
            updated["status"] = new_status
            self.store.update(CRD_GR, updated)

    # --- bootstrap / lifecycle --------------------------------------------------------------------
    async def bootstrap(self, restored):
        options = _system_options()
        ns_type = self.server.registry.by_storage(NS_GR)
        for name in DEFAULT_NAMESPACES:
            if self.store.get(NS_GR, "", name) is None:
                await self.api.create(ns_type, "v1", "", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": name}}, options)
        for ns in self.store.list(NS_GR):
            if not ns["metadata"].get("deletionTimestamp"):
                await self.namespace_defaults(ns["metadata"]["name"])
        if wiring.rbac is not None and hasattr(wiring.rbac, "bootstrap_policy_objects"):
            for obj in wiring.rbac.bootstrap_policy_objects():
                group, _separator, version = obj["apiVersion"].rpartition("/")
                rtype = self.server.registry.by_kind(group, obj["kind"])
                if rtype is None or self.store.get(rtype.storage_group_resource, obj["metadata"].get(
                        "namespace", ""), obj["metadata"]["name"]) is not None:
                    continue
                await self.api.create(rtype, version, obj["metadata"].get("namespace", ""), clone(obj), options)
        for gr, bucket in self.store.buckets.items():
            for obj in bucket.values():
                self._index(gr, None, obj)

    def start(self):
        self.store.watchers.add(self.queue)
        self._loop_task = asyncio.ensure_future(self._run())
        # resume work a restart interrupted (deleting objects, deployments)
        for gr, bucket in list(self.store.buckets.items()):
            for obj in list(bucket.values()):
                if obj["metadata"].get("deletionTimestamp") or gr == DEPLOY_GR:
                    self._react(gr, obj)
        self.schedule_aggregation()

    async def stop(self):
        self.store.watchers.discard(self.queue)
        for handle in self._deployment_timers.values():
            handle.cancel()
        tasks = list(self._tasks) + ([self._loop_task] if self._loop_task else [])
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def spawn(self, coro, delay=0.0):
        async def runner():
            if delay:
                await asyncio.sleep(delay)
            try:
                await coro
            except errors.ApiError as err:
                if err.code not in (404, 409):
                    LOG.warning("controller action failed: %s", err.message)
            except asyncio.CancelledError:
                raise
            except Exception:
                LOG.exception("controller action failed")
        task = asyncio.ensure_future(runner())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --- event loop -------------------------------------------------------------------------------
    async def _run(self):
        while True:
            event = await self.queue.get()
            try:
                self._index(event.group_resource, event.prev, None if event.type == DELETED else event.obj)
                if event.type == DELETED:
                    self._after_gone(event.group_resource, event.obj)
                else:
                    self._react(event.group_resource, event.obj, event.type == ADDED)
            except Exception:
                LOG.exception("controller failed on %s %s/%s", event.type, event.namespace, event.name)

    def _index(self, gr, old, new):
        if old is not None:
            meta = old["metadata"]
            key = (gr, meta.get("namespace", ""), meta["name"])
            for ref in meta.get("ownerReferences") or []:
                self.dependents.get(ref.get("uid"), set()).discard(key)
            if new is None and self.uid_index.get(meta.get("uid")) == key:
                del self.uid_index[meta["uid"]]
        if new is not None:
            meta = new["metadata"]
            key = (gr, meta.get("namespace", ""), meta["name"])
            self.uid_index[meta["uid"]] = key
            for ref in meta.get("ownerReferences") or []:
                self.dependents.setdefault(ref.get("uid"), set()).add(key)

    def _react(self, gr, obj, added=False):
        meta = obj["metadata"]
        if meta.get("ownerReferences") and not meta.get("deletionTimestamp"):
            self.spawn(self.collect_if_orphaned(gr, meta.get("namespace", ""), meta["name"]), self.options.gc_delay)
        if meta.get("deletionTimestamp"):
            finalizers = meta.get("finalizers") or []
            if FINALIZER_ORPHAN in finalizers:
                self.spawn(self.orphan_dependents(gr, obj))
            elif FINALIZER_FOREGROUND in finalizers:
                self.spawn(self.foreground(gr, obj))
            if gr == NS_GR:
                self.spawn(self.terminate_namespace(meta["name"]))
            elif gr == CRD_GR and CRD_FINALIZER in finalizers:
                self.spawn(self.cleanup_crd(obj))
            elif gr == POD_GR and not finalizers:
                self.spawn(self.kubelet_remove(meta.get("namespace", ""), meta["name"], meta["uid"]),
                           self.options.pod_grace_delay)
        elif gr == NS_GR and added:
            self.spawn(self.namespace_defaults(meta["name"]))
        if gr == DEPLOY_GR:
            self.schedule_deployment(meta.get("namespace", ""), meta["name"])
        elif gr == CLUSTER_ROLE_GR:
            self.schedule_aggregation()
        elif gr == POD_GR:
            for ref in meta.get("ownerReferences") or []:
                if ref.get("kind") == "Deployment" and ref.get("controller"):
                    self.schedule_deployment(meta.get("namespace", ""), ref.get("name"))

    def _after_gone(self, gr, obj):
        meta = obj["metadata"]
        uid = meta.get("uid")
        for key in list(self.dependents.get(uid, ())):
            self.spawn(self.collect_if_orphaned(*key), self.options.gc_delay)
        self.dependents.pop(uid, None)
        for ref in meta.get("ownerReferences") or []:
            owner_key = self.uid_index.get(ref.get("uid"))
            if owner_key is not None:
                owner = self.store.get(*owner_key)
                if owner is not None and FINALIZER_FOREGROUND in (owner["metadata"].get("finalizers") or []):
                    self.spawn(self.foreground(owner_key[0], owner))
        if gr == POD_GR:
            for ref in meta.get("ownerReferences") or []:
                if ref.get("kind") == "Deployment":
                    self.schedule_deployment(meta.get("namespace", ""), ref.get("name"))
        elif gr == CLUSTER_ROLE_GR:
            self.schedule_aggregation()

    # --- helpers ----------------------------------------------------------------------------------
    def rtype_of(self, gr):
        return self.server.registry.by_storage(gr)

    async def delete(self, gr, namespace, name, policy="Background", uid=None):
        rtype = self.rtype_of(gr)
        if rtype is None:
            self.store.delete(gr, namespace, name)
            return
        options = {"propagationPolicy": policy}
        if uid:
            options["preconditions"] = {"uid": uid}
        await self.api.delete(rtype, rtype.storage_version, namespace, name, options)

    async def write(self, gr, obj):
        rtype = self.rtype_of(gr)
        if rtype is None:
            return None
        meta = obj["metadata"]
        result, _unused = await self.api.update(rtype, rtype.storage_version, meta.get("namespace", ""), meta["name"], obj,
                                                _system_options())
        return result

    async def remove_finalizer(self, gr, obj, finalizer):
        current = self.store.get(gr, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if current is None or finalizer not in (current["metadata"].get("finalizers") or []):
            return
        updated = clone(current)
        updated["metadata"]["finalizers"] = [f for f in updated["metadata"]["finalizers"] if f != finalizer]
        await self.write(gr, updated)

    # --- garbage collector ------------------------------------------------------------------------
    async def collect_if_orphaned(self, gr, namespace, name):
        obj = self.store.get(gr, namespace, name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        refs = obj["metadata"].get("ownerReferences") or []
        absent = [r for r in refs if r.get("uid") not in self.uid_index]
        if not absent:
            return
        if len(absent) == len(refs):
            LOG.info("garbage collecting %s %s/%s: its owners are gone", gr[1], namespace, name)
            await self.delete(gr, namespace, name, "Background", obj["metadata"]["uid"])
            return
        updated = clone(obj)
        gone = {r.get("uid") for r in absent}
        updated["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") not in gone]
        await self.write(gr, updated)

    async def orphan_dependents(self, gr, owner):
        uid = owner["metadata"]["uid"]
        for key in list(self.dependents.get(uid, ())):
            dependent = self.store.get(*key)
            if dependent is None:
                continue
            updated = clone(dependent)
            refs = [r for r in updated["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
            if refs:
                updated["metadata"]["ownerReferences"] = refs
            else:
                updated["metadata"].pop("ownerReferences", None)
            await self.write(key[0], updated)
        await self.remove_finalizer(gr, owner, FINALIZER_ORPHAN)

    async def foreground(self, gr, owner):
        uid = owner["metadata"]["uid"]
        blocking = 0
        for key in list(self.dependents.get(uid, ())):
            dependent = self.store.get(*key)
            if dependent is None:
                continue
            ref = next((r for r in dependent["metadata"].get("ownerReferences") or [] if r.get("uid") == uid), {})
            if ref.get("blockOwnerDeletion"):
                blocking += 1
            if not dependent["metadata"].get("deletionTimestamp"):
                policy = "Foreground" if self.dependents.get(dependent["metadata"]["uid"]) else "Background"
                await self.delete(key[0], key[1], key[2], policy, dependent["metadata"]["uid"])
        if blocking == 0:
            await self.remove_finalizer(gr, owner, FINALIZER_FOREGROUND)

    # --- namespaces -------------------------------------------------------------------------------
    async def namespace_defaults(self, namespace):
        """The "default" ServiceAccount and the kube-root-ca.crt ConfigMap every namespace gets."""
        options = _system_options()
        registry = self.server.registry
        if self.store.get(("", "serviceaccounts"), namespace, "default") is None:
            await self.api.create(registry.by_storage(("", "serviceaccounts")), "v1", namespace,
                                  {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
                                  options)
        if self.store.get(("", "configmaps"), namespace, "kube-root-ca.crt") is None:
            ca = self.store.extra_state.get("tls", {}).get("ca_cert", "")
            await self.api.create(registry.by_storage(("", "configmaps")), "v1", namespace,
                                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                                      "name": "kube-root-ca.crt",
                                      "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be "
                                                      "used to verify the kube-apiserver when using internal "
                                                      "endpoints such as the internal service IP or "
                                                      "kubernetes.default.svc. No other usage is guaranteed across "
                                                      "distributions of Kubernetes clusters."}},
                                   "data": {"ca.crt": ca}}, options)

    async def terminate_namespace(self, namespace):
        if namespace in self._busy_namespaces:
            return
        self._busy_namespaces.add(namespace)
        try:
            while True:
                remaining = 0
                for gr in list(self.store.buckets):
                    if gr == NS_GR:
                        continue
                    for obj in list(self.store.list(gr, namespace)):
                        remaining += 1
                        if not obj["metadata"].get("deletionTimestamp") or gr == POD_GR:
                            try:
                                await self.delete(gr, namespace, obj["metadata"]["name"], "Background")
                            except errors.ApiError:
                                pass
                if remaining == 0:
                    break
                await asyncio.sleep(0.05)
            ns = self.store.get(NS_GR, "", namespace)
            if ns is not None:
                updated = clone(ns)
                updated.setdefault("spec", {})["finalizers"] = []
                await self.finalize_namespace(updated)
        finally:
            self._busy_namespaces.discard(namespace)

    async def finalize_namespace(self, updated):
        """PUT namespaces/{name}/finalize: spec.finalizers replaced; gone once both finalizer lists are empty."""
        meta = updated["metadata"]
        current = self.store.get(NS_GR, "", meta["name"])
        if current is None:
            raise errors.not_found("", "namespaces", meta["name"])
        obj = clone(current)
        obj["spec"] = dict(obj.get("spec") or {}, finalizers=list(updated["spec"].get("finalizers") or []))
        if not obj["spec"]["finalizers"]:
            del obj["spec"]["finalizers"]
        if obj == current:
            return current
        if obj["metadata"].get("deletionTimestamp") and not obj["spec"].get("finalizers") \
                and not obj["metadata"].get("finalizers"):
            final = self.store.delete(NS_GR, "", meta["name"])
            return final
        self.store.update(NS_GR, obj)
        return obj

    # --- CRDs -------------------------------------------------------------------------------------
    async def cleanup_crd(self, crd):
        name = crd["metadata"]["name"]
        if name in self._busy_crds:
            return
        self._busy_crds.add(name)
        try:
            self.mark_crd_terminating(name)
            spec = crd.get("spec") or {}
            gr = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
            rtype = self.server.registry.by_storage(gr)
            while rtype is not None and rtype.crd_name == name and self.store.count(gr):
                for obj in list(self.store.list(gr)):
                    if not obj["metadata"].get("deletionTimestamp"):
                        try:
                            await self.delete(gr, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
                        except errors.ApiError:
                            pass
                await asyncio.sleep(0.05)
            await self.remove_finalizer(CRD_GR, crd, CRD_FINALIZER)
        finally:
            self._busy_crds.discard(name)

    # --- ClusterRole aggregation -----------------------------------------------------------------------
    def schedule_aggregation(self):
        if self._aggregation_pending or wiring.rbac is None or not hasattr(wiring.rbac, "aggregation_updates"):
            return
        self._aggregation_pending = True
        self.spawn(self.aggregate_cluster_roles())

    async def aggregate_cluster_roles(self):
        """clusterrole-aggregation-controller: write the rules of roles with an aggregationRule."""
        self._aggregation_pending = False
        for name, rules in wiring.rbac.aggregation_updates(self.store.list(CLUSTER_ROLE_GR)):
            current = self.store.get(CLUSTER_ROLE_GR, "", name)
            if current is None:
                continue
            updated = clone(current)
            updated["rules"] = rules
            rtype = self.rtype_of(CLUSTER_ROLE_GR)
            options = _system_options()
            options.field_manager = AGGREGATION_MANAGER
            await self.api.update(rtype, "v1", "", name, updated, options)

    def mark_crd_terminating(self, name):
        """The finalizer controller's Terminating condition (creates are refused from now on)."""
        current = self.store.get(CRD_GR, "", name)
        if current is None:
            return
        conditions = [c for c in (current.get("status") or {}).get("conditions") or [] if c.get("type") != "Terminating"]
        conditions.append({"type": "Terminating", "status": "True", "reason": "InstanceDeletionInProgress",
                           "message": "CustomResource deletion is in progress", "lastTransitionTime": now_rfc3339()})
        updated = clone(current)
        updated.setdefault("status", {})["conditions"] = conditions
        self.store.update(CRD_GR, updated)

    # --- kubelet ----------------------------------------------------------------------------------
    async def kubelet_remove(self, namespace, name, uid):
        pod = self.store.get(POD_GR, namespace, name)
        if pod is None or pod["metadata"].get("uid") != uid or pod["metadata"].get("finalizers"):
            return
        final = self.store.delete(POD_GR, namespace, name)
        if final is not None:
            self.after_delete(self.rtype_of(POD_GR), final)

    # --- deployments ------------------------------------------------------------------------------
    def schedule_deployment(self, namespace, name):
        key = (namespace, name)
        if key in self._deployment_timers:
            return
        loop = asyncio.get_running_loop()

        def fire():
            self._deployment_timers.pop(key, None)
            self.spawn(self.reconcile_deployment(namespace, name))
        self._deployment_timers[key] = loop.call_later(self.options.deployment_delay, fire)

    async def reconcile_deployment(self, namespace, name):
        deployment = self.store.get(DEPLOY_GR, namespace, name)
        if deployment is None or deployment["metadata"].get("deletionTimestamp"):
            return
        spec = deployment.get("spec") or {}
        uid = deployment["metadata"]["uid"]
        desired = spec.get("replicas", 1)
        template = spec.get("template") or {}
        template_hash = pod_template_hash(template)
        pods = []
        for key in list(self.dependents.get(uid, ())):
            if key[0] == POD_GR:
                pod = self.store.get(*key)
                if pod is not None and not pod["metadata"].get("deletionTimestamp"):
                    pods.append(pod)
        current = [p for p in pods if (p["metadata"].get("labels") or {}).get("pod-template-hash") == template_hash]
        if not spec.get("paused"):
            for pod in pods:
                if pod not in current:
                    await self.delete(POD_GR, namespace, pod["metadata"]["name"])
            current.sort(key=lambda p: p["metadata"]["creationTimestamp"])
            while len(current) > desired:
                pod = current.pop()
                await self.delete(POD_GR, namespace, pod["metadata"]["name"])
            while len(current) < desired:
                current.append(self.create_pod(deployment, template_hash))
        count = len(current)
        generation = deployment["metadata"].get("generation", 1)
        now = now_rfc3339()
        old_status = deployment.get("status") or {}
        old_conditions = {c["type"]: c for c in old_status.get("conditions") or []}
        rs_name = "%s-%s" % (name, template_hash)
        conditions = []
        for ctype, reason, message in (
                ("Available", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                ("Progressing", "NewReplicaSetAvailable", 'ReplicaSet "%s" has successfully progressed.' % rs_name)):
            previous = old_conditions.get(ctype, {})
            same = previous.get("status") == "True" and previous.get("reason") == reason
            conditions.append({"type": ctype, "status": "True", "lastUpdateTime": previous.get(
                "lastUpdateTime", now) if same else now, "lastTransitionTime": previous.get(
                "lastTransitionTime", now) if previous.get("status") == "True" else now,
                "reason": reason, "message": message})
        status = {"observedGeneration": generation, "replicas": count, "updatedReplicas": count,
                  "readyReplicas": count, "availableReplicas": count, "conditions": conditions}
        if count == 0:
            for key in ("readyReplicas", "availableReplicas", "updatedReplicas", "replicas"):
                status.pop(key)
        if status != old_status:
            latest = self.store.get(DEPLOY_GR, namespace, name)
            if latest is None or latest["metadata"]["resourceVersion"] != deployment["metadata"]["resourceVersion"]:
                self.schedule_deployment(namespace, name)
                return
            updated = clone(latest)
            updated["status"] = status
            self.store.update(DEPLOY_GR, updated)

    def create_pod(self, deployment, template_hash):
        meta = deployment["metadata"]
        namespace = meta.get("namespace", "")
        template = clone((deployment.get("spec") or {}).get("template") or {})
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        labels["pod-template-hash"] = template_hash
        while True:
            name = "%s-%s-%s" % (meta["name"], template_hash, "".join(random.choice(GENERATE_CHARS)
                                                                      for _round in range(5)))
            if self.store.get(POD_GR, namespace, name) is None:
                break
        spec = template.get("spec") or {}
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec["nodeName"] = "kubeapi-node"
        now = now_rfc3339()
        ip = "10.244.%d.%d" % (random.randint(0, 255), random.randint(2, 254))
        containers = spec.get("containers") or []
        metadata = {
            "name": name, "generateName": "%s-%s-" % (meta["name"], template_hash), "namespace": namespace,
            "uid": _uuid(), "creationTimestamp": now, "labels": labels,
            "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": meta["name"],
                                 "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]}
        conditions = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                      for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")]
        container_statuses = [{"name": c.get("name", ""), "image": c.get("image", ""), "imageID": "", "ready": True,
                               "restartCount": 0, "started": True, "state": {"running": {"startedAt": now}},
                               "containerID": "containerd://" + hashlib.sha256(
                                   (name + c.get("name", "")).encode()).hexdigest()}
                              for c in containers]
        status = {"phase": "Running", "hostIP": "10.0.0.1", "podIP": ip, "podIPs": [{"ip": ip}], "startTime": now,
                  "qosClass": "BestEffort", "conditions": conditions, "containerStatuses": container_statuses}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}
        if not pod["metadata"]["annotations"]:
            del pod["metadata"]["annotations"]
        self.store.create(POD_GR, pod)
        return pod


def _uuid():
    import uuid
    return str(uuid.uuid4())


__all__ = ["Controllers", "pod_template_hash", "base64"]
