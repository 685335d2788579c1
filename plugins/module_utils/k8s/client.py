# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The collection's client layer over kubernetes.core's module_utils.

One client, ApiClient, built one of two ways. Modules build an AnsibleK8SModule with ``auth_argspec()`` (args.py)
merged into their own spec; their runner (runner.py) calls ``ApiClient.from_module(module)``: kubernetes.core's
get_api_client does authentication (kubeconfig, context, host/api_key, certificates, proxies, impersonation, K8S_AUTH_*
environment) and sets the server-side dry run in check mode; an unusable kubeconfig fails the module there, naming the
file (kubeconfig.py). The inventory plugin calls ``ApiClient.from_kubeconfig(kubeconfig, context)``, which sends no
request of its own (no /version, no discovery). ``require_namespace`` checks that the namespace a module works in
exists. Requests go to explicit REST paths (no per-kind discovery), every write carries ``dryRun=All`` in check mode,
and every API failure becomes one ApiError (a PrivateCapiError, errors.py) carrying the API's own message and the
object it concerned. ``explain_failure`` is the one explanation of a failure for the user (what happened, what to do).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import functools
import json
import os
import random
import threading
import time

# auth_argspec and fail_from_error: re-exported from their homes (args.py, errors.py) for the callers of this module
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec  # noqa: F401 pylint: disable=unused-import
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import (  # noqa: F401 pylint: disable=unused-import
    PrivateCapiError,
    fail_from_error,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.transport import transport_problem
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.kubeconfig import (
    kubeconfig_problem,
    unmask_kubeconfig_path,
)

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import K8SClient, get_api_client
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
    from kubernetes import client as kubernetes_client
    from kubernetes import config as kubernetes_config
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError
    from kubernetes.watch import Watch
except ImportError:  # reported by AnsibleK8SModule's requirement check (the inventory: by its parse())
    get_api_client = K8SClient = kubernetes_client = kubernetes_config = DynamicClient = Watch = None
    ApiException = DynamicApiError = ConfigException = CoreException = Exception

    class ResourceNotFoundError(Exception):
        pass

try:
    from urllib3.exceptions import HTTPError as TransportError
except ImportError:  # urllib3 comes with kubernetes; without it nothing here runs anyway
    class TransportError(Exception):
        pass

DRY_RUN_ALL = "All"
FIELD_MANAGER = "hypershift.private_capi"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
# Accept header of aggregated discovery (one request describes every group, version and resource).
AGGREGATED_DISCOVERY_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                               "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                               "application/json")
PARTIAL_METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
CONNECTION_ERROR_REASON = "ConnectionError"
# A LIST whose continue token expired (410 Gone) starts again from its first page at most this many times.
EXPIRED_LIST_RESTARTS = 2


class ApiError(PrivateCapiError):
    """An API request that failed: HTTP status, the API's reason and message, and what was asked."""

    def __init__(self, status, reason, message, what):
        self.status = status
        self.reason = reason
        self.api_message = message
        self.what = what
        super(ApiError, self).__init__("%s failed: %s (%s)" % (
            what, message, "HTTP %s %s" % (status, reason) if status is not None else "no HTTP answer"))

    @property
    def is_conflict(self):
        return self.status == 409

    @property
    def is_not_found(self):
        return self.status == 404

    @property
    def is_already_exists(self):
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def is_transient(self):
        """Worth retrying unchanged: throttled (429), a server-side 5xx, or the connection failed."""
        return self.status is None or self.status == 429 or 500 <= self.status <= 599

    def result(self):
        return {"status": self.status, "reason": self.reason, "api_message": self.api_message}


class ConfigurationError(PrivateCapiError):
    """The kubeconfig (or the in-cluster configuration) a client is built from cannot be used; the message names the
    file and what to fix."""


class NamespaceNotFoundError(ApiError):
    """The namespace a module was asked to work in does not exist (a typo would otherwise read as 'nothing there')."""

    def __init__(self, namespace, option):
        super(NamespaceNotFoundError, self).__init__(404, "NotFound", "namespaces %r not found" % namespace,
                                                     "get Namespace %s" % namespace)
        self.namespace = namespace
        self.args = ("namespace %r (option %s) does not exist (GET %s: 404 NotFound); check the spelling, or create "
                     "the namespace first - nothing was read or written in it"
                     % (namespace, option, api_path("", "v1", "namespaces", name=namespace)),)


def _status_from_exception(exc):
    """(status, reason, message) of a kubernetes ApiException, preferring the Status object's fields."""
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None) or ""
    body = getattr(exc, "body", None)
    message = None
    if body:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
        try:
            decoded = json.loads(text)
        except ValueError:
            message = text.strip()
        else:
            if isinstance(decoded, dict):
                message = decoded.get("message")
                reason = decoded.get("reason") or reason
    return status, reason, message or str(reason or exc)


def explain_failure(error, server="", remedy=None):
    """The one explanation of a failure for the user: which server, what happened, what to do.

    error: what urllib3 raised (no HTTP answer: transport.py says why), an ApiError (the inventory's reads: unreachable,
    credentials, RBAC - `remedy` is the way out besides granting the right), the HTTP error the client's first request
    (/version) got while kubernetes.core built it, or anything else building a client raised.
    """
    if isinstance(error, TransportError):
        return transport_problem(error, server)
    if isinstance(error, ApiError):
        if error.status is None:
            return ("the API server %s is unreachable (%s); check that it is up and reachable from here and that the "
                    "kubeconfig's server address is right" % (server, error.api_message))
        if error.status == 401:
            return ("the API server %s rejected the credentials (401: %s); renew the token or certificate in the "
                    "kubeconfig" % (server, error.api_message))
        if error.status == 403:
            return ("%s is forbidden (403: %s); grant this identity list on it%s"
                    % (error.what, error.api_message, ", or %s" % remedy if remedy else ""))
        return "%s failed on %s: HTTP %s %s: %s" % (error.what, server, error.status, error.reason, error.api_message)
    if isinstance(error, (ApiException, DynamicApiError)):
        return "the API server the connection options name answered /version with an error (%s); check the server " \
               "URL of the kubeconfig context (or host) and the credentials" % error
    return "could not build the API client from the connection options: %s; check the kubeconfig's cluster and user " \
           "entries (server URL, certificate and key files)" % error


class _NoDiscovery(object):
    """A DynamicClient discoverer that discovers nothing: only explicit REST paths are requested (no /version, no
    discovery requests, no discovery cache file in the temp directory)."""

    def __init__(self, client, cache_file=None):
        self.client = client


def _kubeconfig_api_client(kubeconfig, context, owner):
    """A kubernetes ApiClient from a kubeconfig file (None: $KUBECONFIG or ~/.kube/config) and context (None: its
    current context); ConfigurationError naming the file and what to fix in `owner`."""
    problem = kubeconfig_problem({"kubeconfig": kubeconfig, "context": context})
    if problem:  # the modules' own check: names the file and what is wrong with it (not YAML, not a kubeconfig...)
        raise ConfigurationError("%s (fix the kubeconfig or context of %s)" % (problem, owner))
    try:
        contexts, current = kubernetes_config.list_kube_config_contexts(config_file=kubeconfig)
    except (ConfigException, OSError, ValueError) as exc:
        raise ConfigurationError("cannot read kubeconfig %s: %s; fix the file or the kubeconfig of %s"
                                 % (kubeconfig or "(default: $KUBECONFIG or ~/.kube/config)", exc, owner))
    names = sorted(entry.get("name") for entry in contexts or ())
    if context and context not in names:
        raise ConfigurationError("kubeconfig %s has no context %r (its contexts: %s); fix the context (or kubeconfig) "
                                 "of %s" % (kubeconfig or "(default)", context, ", ".join(names) or "none", owner))
    if not context and not current:
        raise ConfigurationError("kubeconfig %s has no current-context; set the context of %s (its contexts: %s)"
                                 % (kubeconfig or "(default)", owner, ", ".join(names) or "none"))
    try:
        return kubernetes_config.new_client_from_config(config_file=kubeconfig, context=context, persist_config=False)
    except (ConfigException, OSError, ValueError) as exc:
        raise ConfigurationError("cannot use kubeconfig %s (context %s): %s; fix the kubeconfig or context of %s"
                                 % (kubeconfig or "(default)", context or current.get("name"), exc, owner))


def api_path(group, version, plural, namespace=None, name=None, subresource=None):
    """The REST path of a collection or object: core group when group is '' or None."""
    parts = ["/api/%s" % version if not group else "/apis/%s/%s" % (group, version)]
    if namespace:
        parts.append("namespaces/%s" % namespace)
    parts.append(plural)
    if name:
        parts.append(name)
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


class ApiClient(object):
    """Thin REST client: JSON in, dicts out, ApiError on failure, dryRun=All on writes in check mode."""

    def __init__(self, k8s_client, dry_run=False, request_timeout=None):
        self._k8s_client = k8s_client  # kubernetes.core's K8SClient: .client (a DynamicClient), .resource()
        self.dry_run = dry_run
        self.request_timeout = request_timeout  # seconds each request may take (None: the kubernetes client's)
        # before_write(method, path, what): called before every request but a GET, may raise to refuse it (the lease
        # fence of state/fence.py while a module process writes under a HostedCluster's lock)
        self.before_write = None
        self._calls_lock = threading.Lock()
        self.calls_by_method = {}

    @classmethod
    def from_module(cls, module):
        """Authenticate like every kubernetes.core module (module params, then K8S_AUTH_* variables).

        A kubeconfig that cannot be used fails the module here, naming the file and what to do (see
        kubeconfig_problem); fail_json is called outside any except block, so the result carries no traceback.
        """
        problem = kubeconfig_problem(module.params)
        k8s_client = None
        if problem is None:
            try:
                k8s_client = get_api_client(module=module)
            except (TransportError, ApiException, DynamicApiError,  # the client reads /version when built
                    CoreException, TypeError, ValueError, KeyError, AttributeError, IOError, OSError) as exc:
                problem = explain_failure(exc, module.params.get("host") or "")
        if problem is not None:
            unmask_kubeconfig_path(module)
            module.fail_json(msg=problem, changed=False)
        return cls(k8s_client, dry_run=bool(module.check_mode))

    @classmethod
    def from_kubeconfig(cls, kubeconfig=None, context=None, request_timeout=None, owner="the connection options"):
        """A client for a kubeconfig file and context (its current context when None); with neither, the in-cluster
        service account when running in a pod, else the default kubeconfig.

        Sends no request of its own (no /version, no discovery): only the REST paths asked later, each given
        request_timeout seconds. ConfigurationError names the file and what to fix in `owner` (the inventory: "this
        entry").
        """
        if not kubeconfig and not context and os.environ.get("KUBERNETES_SERVICE_HOST"):
            configuration = kubernetes_client.Configuration()
            try:
                kubernetes_config.load_incluster_config(client_configuration=configuration)
            except ConfigException as exc:
                raise ConfigurationError("in-cluster configuration failed (%s); give %s a kubeconfig and context"
                                         % (exc, owner))
            api_client = kubernetes_client.ApiClient(configuration)
        else:
            api_client = _kubeconfig_api_client(kubeconfig, context, owner)
        dynamic_client = DynamicClient(api_client, discoverer=_NoDiscovery)
        return cls(K8SClient(configuration=api_client.configuration, client=dynamic_client),
                   request_timeout=request_timeout)

    @property
    def server(self):
        """The API server's URL as configured (for messages)."""
        configuration = getattr(getattr(self._k8s_client, "client", None), "configuration", None)
        return getattr(configuration, "host", "") or ""

    @property
    def calls(self):
        """Requests sent by this client so far (every attempt counts)."""
        with self._calls_lock:
            return sum(self.calls_by_method.values())

    def _count(self, method):
        with self._calls_lock:
            self.calls_by_method[method] = self.calls_by_method.get(method, 0) + 1

    def size_connection_pool(self, connections):
        """Keep up to `connections` keep-alive connections, so that many parallel requests reuse them."""
        api_client = self._k8s_client.client
        configuration = api_client.configuration
        if (configuration.connection_pool_maxsize or 0) >= connections:
            return
        from kubernetes.client import rest

        configuration.connection_pool_maxsize = connections
        api_client.rest_client = rest.RESTClientObject(configuration)

    def unhooked(self):
        """This client without its before_write hook, sharing its connections, check mode and call counts: the
        hook's own writes (the lease fence renewing its token) go through it."""
        clone = copy.copy(self)
        clone.before_write = None
        return clone

    def for_questions(self):
        """This client sending its POSTs for real even in check mode, sharing its connections and call counts: for the
        access reviews, questions the API server answers and never stores (a dry run of one answers nothing)."""
        clone = copy.copy(self)
        clone.dry_run = False
        return clone

    def _api_error(self, exc, what):
        """The ApiError of a failed request: the API's Status (its code, reason and message), or, for a transport
        failure (dropped connection, reset, timeout: no HTTP answer at all), what happened and what to do."""
        if isinstance(exc, TransportError):
            return ApiError(None, CONNECTION_ERROR_REASON, explain_failure(exc, self.server), what)
        status, reason, message = _status_from_exception(exc)
        return ApiError(status, reason, message, what)

    def request(self, method, path, what, body=None, query=None, content_type=None, headers=None):
        """One request; a write first goes through the before_write hook, when one is set."""
        if method != "GET" and self.before_write is not None:
            self.before_write(method, path, what)
        params = dict(query or {})
        if content_type:
            params["content_type"] = content_type
        if headers:
            params["header_params"] = dict(headers)
        if self.request_timeout:
            params["_request_timeout"] = self.request_timeout
        self._count(method)
        try:
            response = self._k8s_client.client.request(method, path, body=body, serialize=False, **params)
        except (ApiException, DynamicApiError, TransportError) as exc:
            raise self._api_error(exc, what)
        data = response.data
        if not data:
            return {}
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        try:
            return json.loads(text)
        except ValueError:
            raise ApiError(getattr(response, "status", None), "InvalidResponse",
                           "the server answered with non-JSON: %r" % text[:200], what)

    def watch(self, path, what, resource_version=None, timeout_seconds=60, watcher=None):
        """The events of one WATCH of a collection (kubernetes.watch.Watch over the dynamic client, each event a dict
        {type, object}, BOOKMARKs included) from resource_version, for at most timeout_seconds (the server ends it
        then; the connection gives up 10 s later). `watcher.stop()` from another thread ends it at once. Failures are
        ApiErrors, as for any request (410 Gone: resource_version is older than the server keeps)."""
        self._count("WATCH")
        watcher = watcher or Watch()
        request = functools.partial(self._k8s_client.client.request, "GET", path, serialize=False)
        query = {"timeout_seconds": int(timeout_seconds), "allow_watch_bookmarks": True,
                 "_request_timeout": (10, timeout_seconds + 10)}
        if resource_version:
            query["resource_version"] = resource_version
        try:
            yield from watcher.stream(request, deserialize=False, **query)
        except (ApiException, DynamicApiError, TransportError) as exc:
            raise self._api_error(exc, what)

    def _write_query(self, query=None):
        params = dict(query or {})
        params["field_manager"] = FIELD_MANAGER
        if self.dry_run:
            params["dry_run"] = DRY_RUN_ALL
        return params

    def collection_path(self, api_version, kind, namespace, what):
        """(REST path of kind's collection, namespaced) resolved by discovery exactly as kubernetes.core's k8s_info
        does (kind, plural, singular or short name); (None, False) when the server does not serve it."""
        try:
            resource = self._k8s_client.resource(kind, api_version)
        except ResourceNotFoundError:
            return None, False
        except (ApiException, DynamicApiError, TransportError) as exc:
            raise self._api_error(exc, what + " (discovery)")
        namespaced = bool(resource.namespaced)
        return resource.path(namespace=namespace if namespaced else None), namespaced

    def get(self, path, what):
        return self.request("GET", path, what)

    def require_namespace(self, namespace, option):
        """One GET of the Namespace: NamespaceNotFoundError when it does not exist (404).

        Returns True when it exists, None when that is unknown: a 403 on the GET (the user may work in the namespace
        without the right to get Namespaces) is no reason to fail, so the run goes on as before.
        """
        path = api_path("", "v1", "namespaces", name=namespace)
        try:
            call_with_retries(lambda: self.get(path, "get Namespace %s" % namespace))
        except ApiError as exc:
            if exc.is_not_found:
                raise NamespaceNotFoundError(namespace, option)
            if exc.status == 403:
                return None
            raise
        return True

    def require_namespaces(self, options):
        """require_namespace for each (option, namespace) pair, each distinct namespace once."""
        seen = set()
        for option, namespace in options:
            if namespace and namespace not in seen:
                seen.add(namespace)
                self.require_namespace(namespace, option)

    def get_or_none(self, path, what):
        """The object, or None when it does not exist (404)."""
        try:
            return self.get(path, what)
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise

    def list_pages(self, path, what, label_selector=None, field_selector=None, page_size=None, headers=None,
                   max_items=None, restarts=EXPIRED_LIST_RESTARTS):
        """(items, metadata of the last page) of one LIST: pages of page_size chained by `continue` (one consistent
        snapshot), each item with apiVersion/kind filled in from its page; stops early once max_items are read.

        The one pagination loop of the collection. A 410 Gone (a continue token older than the server's compaction,
        a LIST slower than etcd keeps history) restarts the LIST from its first page, at most `restarts` times.
        """
        for restart in range(restarts + 1):
            try:
                return self._read_pages(path, what, label_selector, field_selector, page_size, headers, max_items)
            except ApiError as exc:
                if exc.status != 410 or restart == restarts:
                    raise
        return [], {}  # not reached: the last restart raises

    def _read_pages(self, path, what, label_selector, field_selector, page_size, headers, max_items):
        items = []
        continue_token = None
        while True:
            query = {key: value for key, value in (("label_selector", label_selector), ("field_selector", field_selector),
                                                   ("limit", page_size), ("_continue", continue_token)) if value}
            page = self.request("GET", path, what, query=query, headers=headers)
            page_kind = page.get("kind") or ""
            item_kind = page_kind[: -len("List")] if page_kind.endswith("List") else None
            for item in page.get("items") or ():
                item.setdefault("apiVersion", page.get("apiVersion"))
                if item_kind:
                    item.setdefault("kind", item_kind)
                items.append(item)
            list_metadata = page.get("metadata") or {}
            continue_token = list_metadata.get("continue")
            if not continue_token or max_items and len(items) >= max_items:
                return items, list_metadata

    def list(self, path, what, label_selector=None, field_selector=None, limit=None):
        """All items of a collection (list_pages; with limit, the first `limit` items, in pages of limit)."""
        items, _list_metadata = self.list_pages(path, what, label_selector=label_selector, field_selector=field_selector,
                                                page_size=limit, max_items=limit)
        return items

    def list_all(self, path, what, page_size=500, label_selector=None, headers=None):
        """Every item of a collection read in pages of page_size (list_pages): (items, list metadata)."""
        return self.list_pages(path, what, label_selector=label_selector, page_size=page_size, headers=headers)

    def create(self, path, body, what):
        return self.request("POST", path, what, body=body, query=self._write_query())

    def patch(self, path, body, what, content_type=MERGE_PATCH, dry_run=False):
        """PATCH (JSON merge patch by default); metadata.resourceVersion in the body makes it conflict-checked.
        dry_run: a server-side dry run even outside check mode (what the object would be, defaults included)."""
        query = self._write_query()
        if dry_run:
            query["dry_run"] = DRY_RUN_ALL
        return self.request("PATCH", path, what, body=body, query=query, content_type=content_type)

    def delete_collection(self, path, what, label_selector, propagation_policy=None):
        """DELETE every object of a collection matching label_selector (required: never a whole collection)."""
        if not label_selector:
            raise ValueError("delete_collection needs a label selector (%s)" % what)
        query = {"label_selector": label_selector}
        return self.request("DELETE", path, what, body=self._delete_options(propagation_policy), query=query)

    def replace(self, path, body, what):
        """PUT; the body's metadata.resourceVersion makes it conflict-checked (409 when stale)."""
        return self.request("PUT", path, what, body=body, query=self._write_query())

    def delete(self, path, what, propagation_policy=None, preconditions=None):
        """DELETE one object; preconditions ({"uid", "resourceVersion"}) make it refuse (409) a changed object."""
        return self.request("DELETE", path, what, body=self._delete_options(propagation_policy, preconditions))

    def delete_existing(self, path, what):
        """GET then DELETE one object: the object as read, or None when it did not exist (nothing sent). A 404 of the
        DELETE (gone since the GET) is what the caller wanted, not an error."""
        live = self.get_or_none(path, "get " + what)
        if live is not None:
            try:
                self.delete(path, "delete " + what)
            except ApiError as error:
                if not error.is_not_found:
                    raise
        return live

    def _delete_options(self, propagation_policy=None, preconditions=None):
        """The DeleteOptions body of a DELETE. Check mode's dryRun goes in the body: kube-apiserver decodes a DELETE's
        body over its query parameters, so a `?dryRun=All` beside a body is ignored and the object really is deleted
        (with propagationPolicy Orphan it gets a deletionTimestamp and the orphan finalizer, then is gone)."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if self.dry_run:
            body["dryRun"] = [DRY_RUN_ALL]
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if preconditions:
            body["preconditions"] = dict(preconditions)
        return body

    def preferred_version(self, group, what):
        """The preferred served version of an API group, or None when the group is not served."""
        try:
            api_group = self.get("/apis/%s" % group, what)
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise
        preferred = (api_group.get("preferredVersion") or {}).get("version")
        if preferred:
            return preferred
        versions = api_group.get("versions") or ()
        return versions[0].get("version") if versions else None


def call_with_retries(call, attempts=6, base_delay=0.05, max_delay=2.0, sleep=time.sleep):
    """call() until it does not raise a transient ApiError (429, 5xx, no answer), at most `attempts` times.

    Backoff doubles from base_delay (capped at max_delay) with jitter, so parallel workers do not retry in
    lockstep. Non-transient errors and the last transient one propagate unchanged.
    """
    for attempt in range(attempts):
        try:
            return call()
        except ApiError as exc:
            if not exc.is_transient or attempt == attempts - 1:
                raise
            sleep(random.uniform(0.5, 1.0) * min(max_delay, base_delay * 2 ** attempt))


def parallel_map(function, items, parallelism):
    """[function(item) for item in items] on up to `parallelism` threads, results in input order.

    The first exception (in input order) is raised once every started call has finished; calls not yet
    started when a call fails are skipped, so a failing run stops quickly and leaves no request in flight.
    """
    items = list(items)
    if parallelism <= 1 or len(items) <= 1:
        return [function(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    failed = threading.Event()

    def guarded(item):
        if failed.is_set():
            return _SKIPPED
        try:
            return function(item)
        except BaseException:
            failed.set()
            raise

    with ThreadPoolExecutor(max_workers=min(parallelism, len(items))) as pool:
        futures = [pool.submit(guarded, item) for item in items]
    for future in futures:
        exc = future.exception()
        if exc is not None:
            raise exc
    return [future.result() for future in futures]


_SKIPPED = object()
