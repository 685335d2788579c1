# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.k8s_objects: the roles' own manifests (the conversion shim's, the dual
operator's) created, updated or deleted in the controller's worker, where each kubernetes.core.k8s task of them cost a
module process (0.4-0.9 CPU-s each, 205 CPU-s of make test's 879 CPU-s of Ansible: per-task CPU of every
ansible-playbook run of make test, 2026-12-04).

The semantics are kubernetes.core.k8s's for what the roles use: state present creates a missing object and patches
an existing one with the definition (a strategic merge patch, or a JSON merge patch where the API server has no
strategic merge for the kind: custom resources), or with force replaces it (PUT); state absent deletes it; wait
awaits a Deployment's rollout (present) or the object's end (absent). changed compares the object before and after
the write, without what the server keeps of its own."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.hypershift.private_capi.plugins.module_utils.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import MERGE_PATCH, ApiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe_object as label

STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
PATCH_TYPES = {"strategic-merge": STRATEGIC_MERGE_PATCH, "merge": MERGE_PATCH}
# what the server keeps of its own in an object's metadata: never compared
SERVER_METADATA = ("resourceVersion", "managedFields", "generation", "uid", "creationTimestamp")
OPTIONS = dict(
    definitions=dict(type="list", elements="dict", required=True),
    state=dict(type="str", choices=["present", "absent"], default="present"),
    force=dict(type="bool", default=False),
    merge_type=dict(type="str", choices=["strategic-merge", "merge"], default="strategic-merge"),
    wait=dict(type="bool", default=False),
    wait_timeout=dict(type="int", default=120),
    wait_sleep=dict(type="float", default=1.0),
)


class ObjectsError(PrivateCapiError):
    """A definition that cannot be written as given, or a wait that timed out."""


class WaitTimedOut(ObjectsError):
    """The wait ended before every object was ready (present) or gone (absent)."""


def definition_problems(definitions):
    """What makes a definition unusable (no apiVersion, kind or metadata.name), each naming its index: [] when none."""
    problems = []
    for index, obj in enumerate(definitions):
        missing = [field for field, value in (("apiVersion", obj.get("apiVersion")), ("kind", obj.get("kind")),
                                              ("metadata.name", (obj.get("metadata") or {}).get("name")))
                   if not isinstance(value, str) or not value]
        if missing:
            problems.append("definitions[%d] (%s) lacks %s" % (index, label(obj), ", ".join(missing)))
    return problems


def rolled_out(deployment):
    """Whether the Deployment's current template runs in every replica and nothing else runs (kubectl rollout status's
    test): observed, updated, available, no old replica left."""
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    generation = (deployment.get("metadata") or {}).get("generation") or 0
    replicas = spec.get("replicas", 1)
    return (status.get("observedGeneration", 0) >= generation and status.get("updatedReplicas", 0) >= replicas
            and status.get("replicas", 0) <= status.get("updatedReplicas", 0)
            and status.get("availableReplicas", 0) >= replicas)


def identity(obj):
    """{kind, namespace, name} of obj, as the modules' results list each object ("" namespace: cluster-scoped)."""
    metadata = obj.get("metadata") or {}
    return {"kind": obj.get("kind"), "namespace": metadata.get("namespace") or "", "name": metadata.get("name")}


def comparable(obj):
    """obj without what the server keeps of its own (resourceVersion, managed fields ...) and without status."""
    if obj is None:
        return None
    result = dict(obj)
    result["metadata"] = dict((key, value) for key, value in (obj.get("metadata") or {}).items()
                              if key not in SERVER_METADATA)
    result.pop("status", None)
    return result


def awaited(obj, state):
    """Whether a wait for obj (as read; None when it does not exist) is over: absent, gone; present, a Deployment
    rolled out (kubectl rollout status's test), any other kind as soon as it exists."""
    if state == "absent":
        return obj is None
    if obj is None:
        return False
    return rolled_out(obj) if obj.get("kind") == "Deployment" else True


class ObjectsService(ModuleService):
    """One run: each definition written in order (created, patched, replaced or deleted), then the waits."""

    MINIMUMS = {"wait_timeout": 0, "wait_sleep": 0.1}
    TAIL = ()

    def __init__(self, client, params, check_mode=False, diff=False):
        super(ObjectsService, self).__init__(client, params, check_mode=check_mode, diff=diff)
        self.results = []
        self.before = {}
        self.after = {}
        self.last = []  # each definition's object as last read or written (None: it does not exist)
        self.timed_out = False
        self._paths = {}

    @classmethod
    def option_problems(cls, params):
        return definition_problems(params["definitions"])

    def _path(self, obj):
        """The REST path of obj, its kind resolved by discovery as kubernetes.core resolves it."""
        metadata = obj.get("metadata") or {}
        key = (obj["apiVersion"], obj["kind"], metadata.get("namespace") or "")
        if key not in self._paths:
            collection, namespaced = self.client.collection_path(obj["apiVersion"], obj["kind"], key[2] or None,
                                                                 "write " + label(obj))
            if collection is None:
                raise ObjectsError("%s: the API server does not serve kind %s of %s; install its CRD or API first"
                                   % (label(obj), obj["kind"], obj["apiVersion"]))
            if namespaced and not key[2]:
                raise ObjectsError("%s: the kind is namespaced; give metadata.namespace" % label(obj))
            self._paths[key] = collection
        return self._paths[key], "%s/%s" % (self._paths[key], metadata["name"])

    def _record(self, obj, action, before=None, after=None):
        self.results.append(dict(identity(obj), action=action))
        self.last.append(after)
        if action != "unchanged":
            self.before[label(obj)] = comparable(before)
            self.after[label(obj)] = comparable(after)

    def _present(self, obj):
        collection, path = self._path(obj)
        live = self.client.get_or_none(path, "get " + label(obj))
        if live is None:
            created = self.client.create(collection, obj, "create " + label(obj))
            self._record(obj, "created", None, created)
            return
        if self.params["force"]:
            body = dict(obj, metadata=dict(obj.get("metadata") or {},
                                           resourceVersion=(live.get("metadata") or {}).get("resourceVersion")))
            written = self.client.replace(path, body, "replace " + label(obj))
            action = "replaced"
        else:
            content_type = PATCH_TYPES[self.params["merge_type"]]
            try:
                written = self.client.patch(path, obj, "patch " + label(obj), content_type=content_type)
            except ApiError as error:
                # no strategic merge for custom resources: kubernetes.core.k8s falls back to a merge patch the same way
                if error.status != 415 or content_type == MERGE_PATCH:
                    raise
                written = self.client.patch(path, obj, "patch " + label(obj), content_type=MERGE_PATCH)
            action = "patched"
        self._record(obj, action if comparable(written) != comparable(live) else "unchanged", live, written)

    def _absent(self, obj):
        live = self.client.delete_existing(self._path(obj)[1], label(obj))
        if live is None:
            self._record(obj, "absent")
        else:
            self._record(obj, "deleted", live, None)

    def _read(self, index):
        """Definition index read again (None when it does not exist), kept as its last read."""
        obj = self.params["definitions"][index]
        self.last[index] = self.client.get_or_none(self._path(obj)[1], "get " + label(obj))
        return self.last[index]

    def _wait(self, state, sleep=time.sleep, clock=time.monotonic):
        """Read each written object until awaited() says its wait is over; WaitTimedOut naming those left."""
        pending = [index for index, result in enumerate(self.results)
                   if result["action"] not in ("absent", "unchanged") or state == "present"]
        deadline = clock() + self.params["wait_timeout"]
        while True:
            pending = [index for index in pending if not awaited(self._read(index), state)]
            if not pending:
                return
            if clock() >= deadline:
                self.timed_out = True
                raise WaitTimedOut("timed out after %s s waiting for %s: %s" % (
                    self.params["wait_timeout"], "their end" if state == "absent" else "them to be ready (a Deployment:"
                    " every replica updated and available)",
                    ", ".join(label(self.params["definitions"][index]) for index in pending)))
            sleep(self.params["wait_sleep"])

    def partial(self):
        """What the run did so far (also what a failed run returns beside its message)."""
        return {"changed": any(result["action"] not in ("unchanged", "absent") for result in self.results),
                "results": self.results, "resources": [obj for obj in self.last if obj is not None],
                "timed_out": self.timed_out}

    def run(self):
        state = self.params["state"]
        for obj in self.params["definitions"]:
            (self._present if state == "present" else self._absent)(obj)
        if self.params["wait"] and not self.check_mode:
            self._wait(state)
        result = self.partial()
        if self.diff and result["changed"]:
            result["diff"] = {"before": self.before, "after": self.after}
        return result
