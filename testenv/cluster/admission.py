"""Refusals by the real admission chain: a ValidatingAdmissionPolicy and its binding, as a cluster admin would
write one to stop a class of writes (the demo's failing cluster, tests of a refused step).

    policy = refuse(api, "demo-refuse", group="cluster.hypershift.openshift.io", resource="machines",
                    operations=("CREATE",), namespace="clusters-hc-03", message="...", probe=machine)
    policy.remove()
"""
import json
import time

from kubernetes import client
from kubernetes.client.rest import ApiException

ACTIVE_TIMEOUT = 30.0


class Refusal:
    def __init__(self, api, name):
        self.api = api
        self.name = name

    def remove(self):
        registration = client.AdmissionregistrationV1Api(self.api)
        for delete in (registration.delete_validating_admission_policy_binding,
                       registration.delete_validating_admission_policy):
            try:
                delete(self.name, _preload_content=False)
            except ApiException as error:
                if error.status != 404:
                    raise


def refuse(api, name, group, resource, operations=("CREATE",), namespace=None, message=None, probe=None):
    """Deny `operations` on group/resource (in `namespace` only, when given) with a Forbidden carrying `message`.

    Admission policies take effect once kube-apiserver's policy informer has them; when `probe` (an object the
    policy refuses, valid otherwise) is given, this waits until a dry-run create of it is refused."""
    message = message or "refused by ValidatingAdmissionPolicy %s" % name
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": name},
              "spec": {"failurePolicy": "Fail",
                       "matchConstraints": {"resourceRules": [{
                           "apiGroups": [group], "apiVersions": ["*"], "operations": list(operations),
                           "resources": [resource]}]},
                       "validations": [{"expression": "false", "message": message, "reason": "Forbidden"}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": name},
               "spec": {"policyName": name, "validationActions": ["Deny"]}}
    if namespace:
        binding["spec"]["matchResources"] = {"namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": namespace}}}
    registration = client.AdmissionregistrationV1Api(api)
    registration.create_validating_admission_policy(policy, _preload_content=False)
    registration.create_validating_admission_policy_binding(binding, _preload_content=False)
    refusal = Refusal(api, name)
    if probe is not None:
        _wait_refused(api, probe, message)
    return refusal


def _wait_refused(api, probe, message):
    group, _slash, version = probe["apiVersion"].rpartition("/")
    path = "/apis/%s/%s/namespaces/%s/%s?dryRun=All" % (group, version, probe["metadata"]["namespace"],
                                                        probe["kind"].lower() + "s")
    deadline = time.monotonic() + ACTIVE_TIMEOUT
    while True:
        request = api.param_serialize("POST", path, body=probe, auth_settings=["BearerToken"],
                                      header_params={"Content-Type": "application/json"})
        response = api.call_api(*request)
        response.read()
        if response.status == 403 and message in json.loads(response.data).get("message", ""):
            return
        if response.status >= 300 and response.status != 403:
            raise RuntimeError("the probe %s was refused for another reason (%d): %s"
                               % (probe["metadata"]["name"], response.status, response.data[:300]))
        if time.monotonic() > deadline:
            raise RuntimeError("the admission policy did not take effect within %.0fs" % ACTIVE_TIMEOUT)
        time.sleep(0.1)
