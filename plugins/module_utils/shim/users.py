# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.conversion_webhook_users: which CRDs name the conversion webhook Service - one
LIST of the CRDs, judged by references.crds_naming_service. Read-only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import API_CALLS, ModuleService
from ansible_collections.hypershift.private_capi.plugins.module_utils.shim.references import crds_naming_service

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


class WebhookUsersService(ModuleService):
    """conversion_webhook_users' service (k8s/runner.py): RV(api_calls) but no RV(elapsed_seconds), as documented."""

    TAIL = (API_CALLS,)

    def run(self):
        crds = self.client.list(CRD_PATH, "list CustomResourceDefinitions")
        users = crds_naming_service(crds, self.params["service_namespace"], self.params["service_name"])
        return dict(changed=False, in_use=bool(users), crds=users)
