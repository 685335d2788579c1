"""MoveGraph (move/nodes.py): the one graph the object move's steps share, on the realistic fixture objects."""
import copy

from ansible_collections.hypershift.private_capi.plugins.module_utils.move import plan
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.nodes import MoveGraph, MoveNode
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import TO_PRIVATE, GroupMap
from testenv.hcp import build

GROUPS = GroupMap()


def fixture(**options):
    """The fixture's CAPI objects as a server lists them (uids, resourceVersions), and their MovedKinds."""
    objects = [obj for obj in build.build_hcp_namespace("AWS", "clusters", "ex", **options)
               if "cluster.x-k8s.io/" in obj["apiVersion"]]
    kinds = {}
    for index, obj in enumerate(objects):
        obj["metadata"]["uid"] = build.placeholder(obj["kind"], obj["metadata"]["name"])
        obj["metadata"]["resourceVersion"] = str(100 + index)
        group, _slash, version = obj["apiVersion"].rpartition("/")
        kinds.setdefault(obj["kind"], plan.MovedKind(obj["kind"], obj["kind"].lower() + "s", version, group,
                                                     GROUPS.to_private(group)))
    return objects, sorted(kinds.values(), key=lambda kind: kind.key)


def graph_of(objects, moved, targets=()):
    """A linked MoveGraph: sources and targets listed per kind key, as MigrateService.read_all answers."""
    by_kind = dict((kind.kind, kind) for kind in moved)
    sources = dict((kind.key, [obj for obj in objects if obj["kind"] == kind.kind]) for kind in moved)
    listed = dict((kind.key, []) for kind in moved)
    for target in targets:
        listed[by_kind[target["kind"]].key].append(target)
    graph = MoveGraph(moved, sources, listed, served={"served": "as read"})
    graph.link_owners()
    return graph


def names(nodes):
    return [(node.kind.kind, node.name) for node in nodes]


def copy_of(node, uid):
    target = copy.deepcopy(node.source)
    target["apiVersion"] = node.kind.target_api_version
    target["metadata"]["uid"] = uid
    return target


def test_a_node_per_source_with_its_kind_and_target_in_read_order():
    objects, moved = fixture(machines=2, deleting=0)
    machine = next(obj for obj in objects if obj["kind"] == "Machine")
    graph = graph_of(objects, moved, targets=[dict(copy.deepcopy(machine), metadata=dict(machine["metadata"], uid="copy"))])
    assert list(graph.nodes) == [obj["metadata"]["uid"] for kind in moved for obj in objects if obj["kind"] == kind.kind]
    node = graph.nodes[machine["metadata"]["uid"]]
    assert (node.source, node.kind.kind, node.name) == (machine, "Machine", machine["metadata"]["name"])
    assert node.target["metadata"]["uid"] == "copy"
    assert graph.targets == {(node.kind.key, node.name): node.target}
    assert all(other.target is None for other in graph.nodes.values() if other is not node)
    assert graph.moved_set == set((kind.source_group, kind.kind) for kind in moved)
    assert graph.kinds_by_key == dict((kind.key, kind) for kind in moved) and graph.served == {"served": "as read"}


def test_levels_of_nodes_put_owners_first_in_the_ownership_graphs_order():
    objects, moved = fixture(machines=2, deleting=0)
    graph = graph_of(objects, moved)
    levels = graph.levels(list(graph.nodes.values()))
    assert [[node.uid for node in members] for members in levels] == graph.ownership.levels(list(graph.nodes))
    assert [sorted(set(node.kind.kind for node in members)) for members in levels] == [
        ["Cluster"], ["AWSCluster", "AWSMachineTemplate", "MachineDeployment", "MachineHealthCheck"], ["MachineSet"],
        ["Machine"], ["AWSMachine"]]
    machines = [node for node in graph.nodes.values() if node.kind.kind == "Machine"]
    assert graph.levels(machines) == [sorted(machines, key=lambda node: node.name)]


def test_without_carry_the_skipped_nodes_are_not_copied():
    objects, moved = fixture(machines=2, deleting=1)
    graph = graph_of(objects, moved)
    graph.choose_copies(carry=False)
    skipped = graph.skipped()
    assert sorted(node.kind.kind for node in skipped) == ["AWSMachine", "Machine"]
    assert all(node.skipped.startswith("being deleted") and not node.own for node in skipped)
    assert graph.copyable() == [node for node in graph.nodes.values() if node.skipped is None]
    assert graph.deleting() == [] and graph.orphaning() == set()


def test_with_carry_the_deletions_in_flight_are_copied_and_their_copies_deleted():
    objects, moved = fixture(machines=2, deleting=1)
    graph = graph_of(objects, moved)
    graph.choose_copies(carry=True)
    assert graph.copyable() == list(graph.nodes.values())
    assert sorted(names(graph.deleting())) == sorted(names(graph.skipped()))
    for node in graph.skipped():
        node.copy = copy_of(node, "copy-of-" + node.uid)
    assert names(graph.to_mark()) == names(graph.skipped()), "each copied skipped node is marked with its copy"


def test_this_modules_own_deletions_are_not_carried():
    objects, moved = fixture(machines=1, deleting=0)
    check = next(obj for obj in objects if obj["kind"] == "MachineHealthCheck")
    check["metadata"].update(deletionTimestamp=build.STAMP, finalizers=["orphan"])
    node_kind = next(kind for kind in moved if kind.kind == "MachineHealthCheck")
    body, _status = plan.desired_target(check, node_kind, TO_PRIVATE, GROUPS, [])
    graph = graph_of(objects, moved, targets=[body])
    graph.choose_copies(carry=True)
    node = graph.nodes[check["metadata"]["uid"]]
    assert node.skipped and node.own and not node.copyable and node.orphaning
    assert graph.orphaning() == {node.uid}
    assert not node.deleting and node not in graph.to_delete(), "only the garbage collector holds it"


def test_carried_nodes_name_their_copies_and_a_copy_left_is_deleted_after_the_copied_ones():
    objects, moved = fixture(machines=2, deleting=1)
    going = next(obj for obj in objects if obj["kind"] == "Machine" and obj["metadata"].get("deletionTimestamp"))
    going["metadata"]["annotations"].update(plan.carried_mark("copy-uid", deletes_copy=True))
    left = dict(copy.deepcopy(going), metadata=dict(copy.deepcopy(going["metadata"]), uid="copy-uid"))
    graph = graph_of(objects, moved, targets=[left])
    graph.choose_copies(carry=True)
    node = graph.nodes[going["metadata"]["uid"]]
    assert node.carried and not node.copyable, "never copied again"
    graph.take_carried()
    assert node.owner_target == (node.kind.target_api_version, "copy-uid") and node.copy is left and node.deleting
    assert graph.owner_targets() == {node.uid: node.owner_target}
    assert graph.deleting()[-1] is node and [other.copyable for other in graph.deleting()] == [True, False]
    assert node not in graph.to_mark(), "carried already"


def test_the_delete_phase_takes_the_copied_and_the_carried_but_not_those_gone():
    objects, moved = fixture(machines=2, deleting=1)
    graph = graph_of(objects, moved)
    graph.choose_copies(carry=True)
    machine = next(node for node in graph.skipped() if node.kind.kind == "Machine")
    machine.gone = True
    assert machine not in graph.to_delete() and len(graph.to_delete()) == len(graph.nodes) - 1
    carried = next(node for node in graph.skipped() if node.kind.kind == "AWSMachine")
    carried.copyable = False
    carried.source["metadata"]["annotations"].update(plan.carried_mark("copy-uid", deletes_copy=True))
    assert carried.controller_finalizers() and not carried.only_the_gc_holds() and carried in graph.to_delete()
    carried.source["metadata"]["finalizers"] = ["orphan"]
    assert carried.controller_finalizers() == [] and carried.only_the_gc_holds() and carried not in graph.to_delete()


def test_nodes_sort_by_kind_then_name():
    objects, moved = fixture(machines=2, deleting=0)
    graph = graph_of(objects, moved)
    ordered = sorted(graph.nodes.values(), key=MoveNode.report_order)
    assert names(ordered) == sorted(names(graph.nodes.values()))
