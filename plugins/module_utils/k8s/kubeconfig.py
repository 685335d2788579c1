# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The kubeconfig a module will use, checked before kubernetes' loader sees it.

kubernetes' loader reports a bad kubeconfig as "'str' object does not support item assignment", "[Errno 21] Is a
directory" or "No configuration found", naming no file. kubeconfig_problem() reads the kubeconfig the way
kubernetes.core will (option, K8S_AUTH_* variables, KUBECONFIG or ~/.kube/config) and says which file is wrong, how,
and what to do; client.ApiClient.from_module fails the module with it (a user error: no traceback), and
ApiClient.from_kubeconfig (the inventory) raises it as a ConfigurationError.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

try:
    import yaml
except ImportError:  # reported by AnsibleK8SModule's requirement check (PyYAML comes with kubernetes)
    yaml = None

KUBECONFIG_HELP = "`kubectl config view --kubeconfig FILE` shows what a kubeconfig holds"


def _auth_value(params, environ, option, alias=None):
    """An authentication option as kubernetes.core reads it: the module option, else K8S_AUTH_<OPTION or ALIAS>."""
    value = params.get(option)
    if value is not None:
        return value
    for name in (option, alias):
        if name and environ.get("K8S_AUTH_%s" % name.upper()):
            return environ["K8S_AUTH_%s" % name.upper()]
    return None


def _uses_kubeconfig(params, environ):
    """Whether kubernetes.core will load a kubeconfig (False: host credentials suffice, or in-cluster config)."""
    def given(*names):
        return all(_auth_value(params, environ, *name) for name in names)

    if given(("host",)) and (given(("username",), ("password",)) or given(("api_key",))
                             or given(("client_cert", "cert_file"), ("client_key", "key_file"))):
        return False
    if _auth_value(params, environ, "kubeconfig") or _auth_value(params, environ, "context"):
        return True
    # kubernetes.core tries the in-cluster configuration first when no kubeconfig or context is given
    in_cluster = environ.get("KUBERNETES_SERVICE_HOST") and environ.get("KUBERNETES_SERVICE_PORT") and \
        os.path.isfile("/var/run/secrets/kubernetes.io/serviceaccount/token")
    return not in_cluster


def _read_kubeconfig_file(path, label):
    """(document, None) of one kubeconfig file, or (None, problem)."""
    if os.path.isdir(path):
        return None, "%s is a directory, not a kubeconfig file; point kubeconfig at the file inside it (often " \
                     "<dir>/config or <dir>/kubeconfig)" % label
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except (IOError, OSError) as exc:
        return None, "%s cannot be read (%s); check its permissions for the user running the module" \
            % (label, getattr(exc, "strerror", None) or exc)
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        return None, "%s is not YAML (%s%s); %s" % (
            label, "line %d: " % (where.line + 1) if where is not None else "",
            getattr(exc, "problem", None) or exc, KUBECONFIG_HELP)
    if document is None:
        return None, "%s is empty; write a kubeconfig into it (%s)" % (label, KUBECONFIG_HELP)
    return document, None


def _kubeconfig_shape_problem(document, label):
    if not isinstance(document, dict):
        if isinstance(document, str):
            held = "text (%r)" % (document[:40] if len(document) > 40 else document)
        else:
            held = "a list" if isinstance(document, list) else "the value %r" % (document,)
        return "%s is not a kubeconfig: it holds %s, not a mapping with clusters, contexts, users and " \
               "current-context; point kubeconfig at a kubeconfig file (%s)" % (label, held, KUBECONFIG_HELP)
    for section in ("clusters", "contexts", "users"):
        entries = document.get(section)
        if entries is None:
            continue
        if not isinstance(entries, list) or not all(isinstance(entry, dict) and isinstance(entry.get("name"), str)
                                                    for entry in entries):
            return "%s is not a kubeconfig: %s must be a list of entries with a name, got %r; fix the file (%s)" \
                % (label, section, entries, KUBECONFIG_HELP)
    return None


def _context_problem(merged, contexts, clusters, context, label):
    wanted = context or merged.get("current-context")
    names = ", ".join(sorted(contexts)) or "none"
    if not wanted:
        return "%s has no current-context and no context was given; set the module option context (contexts in the " \
               "file: %s) or run `kubectl config use-context NAME --kubeconfig FILE`" % (label, names)
    if wanted not in contexts:
        how = "the context option asks for" if context else "its current-context is"
        return "%s: %s %r, which the kubeconfig does not define (contexts in the file: %s); give one of those" \
            % (label, how, wanted, names)
    entry = contexts[wanted].get("context")
    cluster = entry.get("cluster") if isinstance(entry, dict) else None
    if not cluster or cluster not in clusters:
        return "%s: context %r names cluster %r, which the kubeconfig does not define (clusters in the file: %s); " \
               "fix the context or add the cluster" % (label, wanted, cluster, ", ".join(sorted(clusters)) or "none")
    return None


def unmask_kubeconfig_path(module):
    """Let messages name the kubeconfig file: kubernetes.core marks the option no_log for its inline-mapping form (which
    holds credentials); a path is no secret, and masking it would print '********' where the file's name belongs."""
    path = module.params.get("kubeconfig")
    ansible_module = getattr(module, "_module", module)  # AnsibleK8SModule wraps the AnsibleModule
    if isinstance(path, str) and isinstance(getattr(ansible_module, "no_log_values", None), set):
        ansible_module.no_log_values.discard(path)


def kubeconfig_problem(params, environ=None):
    """Why the kubeconfig kubernetes.core would load for these module params is unusable, or None.

    The message names the file (or the inline mapping) and where it came from (option, K8S_AUTH_KUBECONFIG,
    KUBECONFIG, ~/.kube/config), what is wrong (missing, a directory, unreadable, not YAML, not a kubeconfig
    mapping, no current context, an unknown context or cluster) and what to do.
    """
    environ = os.environ if environ is None else environ
    if not _uses_kubeconfig(params, environ):
        return None
    context = _auth_value(params, environ, "context")
    kubeconfig = params.get("kubeconfig")
    if kubeconfig is not None:
        source = "option kubeconfig"
    elif environ.get("K8S_AUTH_KUBECONFIG"):
        kubeconfig, source = environ["K8S_AUTH_KUBECONFIG"], "K8S_AUTH_KUBECONFIG"
    elif environ.get("KUBECONFIG"):
        kubeconfig, source = environ["KUBECONFIG"], "KUBECONFIG, no kubeconfig option given"
    else:
        kubeconfig, source = "~/.kube/config", "the default location, no kubeconfig option given"
    if isinstance(kubeconfig, dict):
        documents = [(kubeconfig, "the kubeconfig mapping given inline (%s)" % source)]
    elif not isinstance(kubeconfig, str):
        return "option kubeconfig must be a file path or a kubeconfig mapping, got a %s" % type(kubeconfig).__name__
    else:
        paths = [os.path.expanduser(path) for path in kubeconfig.split(os.pathsep) if path]
        existing = [path for path in paths if os.path.exists(path)]  # kubernetes skips missing entries of a list
        if not existing:
            return "kubeconfig %s (%s) does not exist; give the path of an existing kubeconfig file (option " \
                   "kubeconfig or K8S_AUTH_KUBECONFIG)" % (kubeconfig, source)
        documents = []
        for path in existing:
            label = "kubeconfig %s (%s)" % (path, source)
            document, problem = _read_kubeconfig_file(path, label)
            if problem:
                return problem
            documents.append((document, label))
    merged, contexts, clusters = {}, {}, {}
    for document, label in documents:  # merged as kubernetes merges KUBECONFIG lists: first entry of a name wins
        problem = _kubeconfig_shape_problem(document, label)
        if problem:
            return problem
        for entry in document.get("contexts") or ():
            contexts.setdefault(entry["name"], entry)
        for entry in document.get("clusters") or ():
            clusters.setdefault(entry["name"], entry)
        if "current-context" in document:
            merged["current-context"] = document["current-context"]
    label = documents[0][1] if len(documents) == 1 else "kubeconfig %s (%s)" % (kubeconfig, source)
    return _context_problem(merged, contexts, clusters, context, label)
