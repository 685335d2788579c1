"""The layers of plugins/module_utils, read statically from the AST (imports inside functions included).

(a) The foundation - k8s/ (the client layer) and translate/ (the pure translation core) - imports from another package
    of the collection only leaf modules (modules that import nothing of the collection, such as errors.py).
(b) No import cycle exists among the packages (k8s, translate, move, state, fleet, ...; a top-level module such as
    hypershift.py counts as a package of its own).

Generic: every directory and top-level module found is a package, so a package added later is checked the same way.
A failure prints the offending imports (module -> module), so the fix is where it names.
"""
import ast
import os

from testenv import REPO_ROOT

MODULE_UTILS = os.path.join(REPO_ROOT, "plugins", "module_utils")
COLLECTION = "ansible_collections.hypershift.private_capi"
PREFIX = COLLECTION + ".plugins.module_utils."
FOUNDATION = ("k8s", "translate")


def _module_files():
    """{dotted module name under module_utils: file path}; a package's __init__.py is the package's own name."""
    modules = {}
    for directory, _subdirectories, files in os.walk(MODULE_UTILS):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            parts = os.path.relpath(path, MODULE_UTILS)[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts:
                modules[".".join(parts)] = path
    return modules


def _absolute(module, path, node):
    """The absolute dotted name an ImportFrom names (relative imports resolved against module's package)."""
    if not node.level:
        return node.module or ""
    package = module.split(".")
    if not path.endswith("__init__.py"):
        package = package[:-1]
    base = package[:len(package) - node.level + 1] if node.level > 1 else package
    return PREFIX + ".".join(base + ([node.module] if node.module else []))


def _imports(modules):
    """({module: {imported module_utils module}}, {module that imports anything of the collection})."""
    edges, of_collection = {}, set()
    for module, path in modules.items():
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [(alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(module, path, node)
                names = [(source, alias.name) for alias in node.names]
            else:
                continue
            for source, name in names:
                if not source.startswith(COLLECTION):
                    continue
                of_collection.add(module)
                if not (source + ".").startswith(PREFIX):
                    continue
                target = source[len(PREFIX):]
                submodule = ".".join(part for part in (target, name) if part)
                if name and submodule in modules:  # from ...module_utils.state import machine as states
                    target = submodule
                if target in modules and target != module:
                    targets.add(target)
        edges[module] = targets
    return edges, of_collection


def package_of(module):
    return module.split(".")[0]


def cycles(graph):
    """The strongly connected components of more than one node of {node: {node}} (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


MODULES = _module_files()
EDGES, OF_COLLECTION = _imports(MODULES)
LEAVES = {module for module in MODULES if module not in OF_COLLECTION}


def test_the_scan_sees_the_packages_and_their_imports():
    assert {"k8s.client", "translate.groups", "state.service"} <= set(MODULES)
    assert "k8s.client" in EDGES["state.service"], "the scan misses a plain from-import"
    assert "state.machine" in EDGES["state.service"], "the scan misses `from ...state import machine as states`"


def test_the_foundation_imports_only_leaf_modules_of_other_packages():
    offending = ["%s -> %s (not a leaf: it imports %s)" % (
        module, target, ", ".join(sorted(EDGES[target])) or "the collection outside module_utils")
        for module in sorted(MODULES) if package_of(module) in FOUNDATION
        for target in sorted(EDGES[module]) if package_of(target) != package_of(module) and target not in LEAVES]
    assert not offending, "k8s/ and translate/ may import from another package only leaf modules:\n  " + \
        "\n  ".join(offending)


def test_no_import_cycle_among_the_packages():
    crossing = {}
    for module, targets in EDGES.items():
        for target in targets:
            if package_of(target) != package_of(module):
                crossing.setdefault((package_of(module), package_of(target)), []).append("%s -> %s" % (module, target))
    graph = {}
    for source, target in crossing:
        graph.setdefault(source, set()).add(target)
    found = cycles(graph)
    report = []
    for component in found:
        report.append("cycle among %s:" % " <-> ".join(component))
        report.extend("  %s -> %s: %s" % (source, target, ", ".join(sorted(crossing[(source, target)])))
                      for source, target in sorted(crossing) if source in component and target in component)
    assert not found, "import cycles among the plugins/module_utils packages:\n" + "\n".join(report)


def test_cycles_finds_a_hidden_cycle_and_nothing_else():
    assert cycles({"k8s": {"state"}, "state": {"k8s"}, "fleet": {"k8s", "state"}}) == [["k8s", "state"]]
    three = {"k8s": {"move"}, "move": {"state"}, "state": {"k8s"}, "translate": set()}
    assert cycles(three) == [["k8s", "move", "state"]]
    assert cycles({"fleet": {"k8s"}, "k8s": {"errors"}}) == []
