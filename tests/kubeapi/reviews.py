"""Virtual (create-only) resources: access reviews, SelfSubjectReview, TokenReview, and TokenRequest."""
import copy

from . import errors, wiring
from .api import now_rfc3339

VIRTUAL = {("authentication.k8s.io", "selfsubjectreviews"), ("authentication.k8s.io", "tokenreviews"),
           ("authorization.k8s.io", "selfsubjectaccessreviews"),
           ("authorization.k8s.io", "selfsubjectrulesreviews"),
           ("authorization.k8s.io", "subjectaccessreviews"),
           ("authorization.k8s.io", "localsubjectaccessreviews")}


def _user_dict(user):
    if hasattr(user, "to_dict"):
        return user.to_dict()
    return {k: v for k, v in wiring.user_to_dict(user).items() if v}


def _check(rtype, obj):
    expected = rtype.api_version("v1")
    if isinstance(obj, dict):
        obj.setdefault("kind", rtype.kind)
        obj.setdefault("apiVersion", expected)
    if not isinstance(obj, dict) or obj.get("kind") != rtype.kind or obj.get("apiVersion") != expected:
        raise errors.bad_request("the object provided is unrecognized (must be of type %s)" % rtype.kind)


def _access(server, user, spec, namespace_override=None):
    if hasattr(server.authorizer, "access_review"):
        if namespace_override is not None and isinstance(spec.get("resourceAttributes"), dict):
            spec = dict(spec, resourceAttributes=dict(spec["resourceAttributes"], namespace=namespace_override))
        return server.authorizer.access_review(user, spec)
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    if resource:
        attrs = wiring.request_attributes(
            verb=resource.get("verb", ""), api_group=resource.get("group", ""),
            resource=resource.get("resource", ""), subresource=resource.get("subresource", ""),
            namespace=namespace_override if namespace_override is not None else resource.get("namespace", ""),
            name=resource.get("name", ""), path="", resource_request=True)
    elif non_resource:
        attrs = wiring.request_attributes(verb=non_resource.get("verb", ""), api_group="", resource="",
                                          subresource="", namespace="", name="", path=non_resource.get("path", ""),
                                          resource_request=False)
    else:
        raise errors.invalid("authorization.k8s.io", "SelfSubjectAccessReview", "", [errors.field_invalid(
            "spec.resourceAttributes", None, "exactly one of nonResourceAttributes or resourceAttributes must be "
                                             "specified")])
    allowed, reason = server.authorizer.authorize(user, attrs)
    status = {"allowed": bool(allowed)}
    if reason:
        status["reason"] = reason
    return status


def handle(server, rtype, info, obj, user):
    _check(rtype, obj)
    result = copy.deepcopy(obj)
    result.setdefault("metadata", {})["creationTimestamp"] = None
    spec = result.get("spec") or {}
    resource = rtype.plural
    if resource == "selfsubjectaccessreviews":
        result["status"] = _access(server, user, spec)
    elif resource in ("subjectaccessreviews", "localsubjectaccessreviews"):
        subject = wiring.make_user(spec.get("user", ""), spec.get("groups") or [], spec.get("uid", ""),
                                   spec.get("extra") or {})
        namespace = info.namespace if resource == "localsubjectaccessreviews" else None
        if namespace is not None:
            result["metadata"]["namespace"] = namespace
        result["status"] = _access(server, subject, spec, namespace)
    elif resource == "selfsubjectrulesreviews" and hasattr(server.authorizer, "rules_review_status"):
        result["status"] = server.authorizer.rules_review_status(user, spec.get("namespace", ""))
    elif resource == "selfsubjectrulesreviews":
        answer = server.authorizer.rules_for(user, spec.get("namespace", ""))
        resource_rules, non_resource_rules = answer[0], answer[1]
        evaluation_error = answer[2] if len(answer) > 2 else ""   # rbac.py returns an evaluation error too
        result["status"] = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                            "incomplete": bool(evaluation_error)}
        if evaluation_error:
            result["status"]["evaluationError"] = evaluation_error
    elif resource == "selfsubjectreviews":
        result["status"] = {"userInfo": _user_dict(user)}
    elif resource == "tokenreviews":
        token = spec.get("token", "")
        reviewed = server.authenticator.authenticate("Bearer " + token) if token else None
        if reviewed is None:
            result["status"] = {"authenticated": False, "user": {}, "error": "invalid bearer token"}
        else:
            result["status"] = {"authenticated": True, "user": _user_dict(reviewed),
                                "audiences": spec.get("audiences") or ["https://kubernetes.default.svc.cluster.local"]}
    return result


def token_request(server, namespace, name, obj):
    if isinstance(obj, dict):
        obj.setdefault("kind", "TokenRequest")
    if not isinstance(obj, dict) or obj.get("kind") != "TokenRequest":
        raise errors.bad_request("the object provided is unrecognized (must be of type TokenRequest)")
    account = server.store.get(("", "serviceaccounts"), namespace, name)
    if account is None:
        raise errors.not_found("", "serviceaccounts", name)
    spec = dict(obj.get("spec") or {})
    expiration = spec.get("expirationSeconds") or 3600
    bound = spec.get("boundObjectRef")
    if bound:
        kind = bound.get("kind")
        resource = {"Pod": "pods", "Secret": "secrets"}.get(kind)
        target = server.store.get(("", resource), namespace, bound.get("name", "")) if resource else None
        if resource and target is None:
            raise errors.not_found("", resource, bound.get("name", ""))
        if target is not None:
            if bound.get("uid") and bound["uid"] != target["metadata"]["uid"]:
                raise errors.conflict("", resource, bound.get("name", ""),
                                      "the UID in the bound object reference (%s) does not match the UID in record. "
                                      "The object might have been deleted and then recreated" % bound["uid"])
            bound = dict(bound, uid=target["metadata"]["uid"])
    if wiring.auth is None:
        raise errors.service_unavailable("TokenRequest needs tests/kubeapi/auth.py")
    # validation errors name the TokenRequest (usually ""), not the ServiceAccount
    token, expires = server.authenticator.issue_service_account_token(
        account, spec.get("audiences") or None, expiration, bound, None,
        request_name=(obj.get("metadata") or {}).get("name", ""))
    spec["expirationSeconds"] = expiration
    spec.setdefault("audiences", ["https://kubernetes.default.svc.cluster.local"])
    spec.setdefault("boundObjectRef", None)
    return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": now_rfc3339()},
            "spec": spec, "status": {"token": token, "expirationTimestamp": expires}}
