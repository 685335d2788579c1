"""The conversion core against upstream's own conversion code, case by case (issue 32).

The upstream side is cluster-api's conversion package at the pinned release, built as a test binary with one file
added (testenv/cluster/convdiff.py): its Convert*V1Beta1ToHub / Convert*HubToV1Beta1 functions, and its own fuzzer
functions for the inputs. For each core kind, inputs come from upstream's fuzzers ("upstream") and from an
unconstrained, sparse fill ("sparse": most pointers nil, few list items, any string), in both versions, and every
input is checked both ways:

* v1beta1 input S: up(S) equal; then down(upstream's up(S)) equal;
* v1beta2 input H: down(H) equal (the conversion-data annotation compared as the data it holds); up of upstream's
  down(H) by the core equal to upstream's (the core reads upstream's annotation); up of the core's down(H) by
  upstream equal (upstream reads the core's annotation); and up of a v1beta1 object that holds only the metadata
  (labels, annotations) of upstream's down(H), as kube-apiserver sends it for managedFields.

* each side's own round trip, as kube-apiserver chains conversions (JSON between the steps): the core's up then down
  of S equal to upstream's up then down of S, read again by upstream's up (the core's annotation against upstream's);
  the core's down then up of H equal to upstream's down then up of H.

Both sides are compared as a Go client of their version decodes them, and the core writes no null where upstream
writes nothing. Both sides failing on an input counts as equal (neither stores anything); one side failing is a
difference. A round trip where the core gives back its input and upstream does not is a difference too, named
"kept": the core loses what upstream loses (convert_object lists those losses).
"""

import json
import os

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.diff import diff_objects
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import (
    CONVERSION_DATA_ANNOTATION,
    ConversionError,
    convert_object,
)
from testenv.cluster.convdiff import Upstream, ensure_convdiff

KINDS = ("Cluster", "Machine", "MachineSet", "MachineDeployment", "MachineHealthCheck", "MachinePool",
         "MachineDrainRule")
FILLS = ("upstream", "sparse")
CASES = int(os.environ.get("CONVDIFF_CASES", "400"))  # per kind, fill and version
SEED = int(os.environ.get("CONVDIFF_SEED", "20261127"))


@pytest.fixture(scope="module")
def upstream():
    return Upstream(ensure_convdiff())


# kube-apiserver keeps a webhook's answer only in these metadata fields; every other one comes from the stored object
# (apiextensions-apiserver's webhook converter, restoreObjectMeta)
_CONVERTED_METADATA = ("labels", "annotations")


def _comparable(result):
    """A result as compared: an error is just 'error'; of metadata, what kube-apiserver takes from a conversion; the
    conversion-data annotation left out (its text differs by design: upstream stores the whole v1beta2 object, the
    core only what v1beta1 cannot hold; what it means is compared instead, by each side's up-conversion of the other
    side's down-conversion)."""
    if "error" in result:
        return "error"
    obj = json.loads(json.dumps(result["object"]))
    metadata = {key: value for key, value in (obj.get("metadata") or {}).items() if key in _CONVERTED_METADATA}
    metadata.get("annotations", {}).pop(CONVERSION_DATA_ANNOTATION, None)
    obj["metadata"] = {key: value for key, value in metadata.items() if value}
    return obj


def _diff(core, upstream):
    """Where the core's result differs from upstream's (the collection's own diff_objects), for a readable failure."""
    out = []
    for change in diff_objects(core, upstream):
        if change["change"] == "added":
            out.append("%s: only upstream has %s" % (change["path"], json.dumps(change["after"])[:200]))
        elif change["change"] == "removed":
            out.append("%s: only the core has %s" % (change["path"], json.dumps(change["before"])[:200]))
        else:
            out.append("%s: core %s, upstream %s" % (change["path"], json.dumps(change["before"])[:200],
                                                     json.dumps(change["after"])[:200]))
    return out


def _nulls_upstream_omits(mine, their):
    """Paths where the core's answer holds a null and upstream's no key at all (Go reads both as unset, other clients
    do not), in what is compared of both."""
    paths = []

    def walk(core_node, their_node, path):
        if isinstance(core_node, list) and isinstance(their_node, list) and len(core_node) == len(their_node):
            for position, (core_item, their_item) in enumerate(zip(core_node, their_node)):
                walk(core_item, their_item, "%s[%d]" % (path, position))
        if not isinstance(core_node, dict):
            return
        for key, value in core_node.items():
            inner = "%s.%s" % (path, key) if path else key
            present = isinstance(their_node, dict) and key in their_node
            if value is None and not present:
                paths.append(inner)
            elif present:
                walk(value, their_node[key], inner)

    walk(_comparable(mine), _comparable(their), "")
    return ["%s: only the core has null" % path for path in paths]


def differences(upstream, kind, fill, count=CASES, seed=SEED, convert=convert_object):
    """Every check of the module docstring for count inputs of each version: (number of checks, a list of
    (check, input, paths) for those that differ)."""
    ref_versions = upstream.run([{"op": "ref_versions"}])[0]["ref_versions"]
    generated = upstream.run([
        {"op": "generate", "kind": kind, "version": version, "fill": fill, "seed": seed + offset, "count": count}
        for offset, version in enumerate(("v1beta1", "v1beta2"))])
    spokes, hubs = generated[0]["objects"], generated[1]["objects"]

    def theirs(objs_to):
        return upstream.run([{"op": "convert", "to": to, "object": obj} for obj, to in objs_to])

    def core(obj, to):
        try:
            return {"object": convert(obj, to, ref_versions=ref_versions)}
        except ConversionError as exc:
            return {"error": str(exc)}

    checks = []  # (name, input, the core's result, upstream's result)
    up = theirs([(s, "v1beta2") for s in spokes])
    down = theirs([(h, "v1beta1") for h in hubs])
    core_up = [core(s, "v1beta2") for s in spokes]
    core_down = [core(h, "v1beta1") for h in hubs]
    checks += [("up", s, c, r) for s, c, r in zip(spokes, core_up, up)]
    checks += [("down", h, c, r) for h, c, r in zip(hubs, core_down, down)]
    ups = [r["object"] for r in up if "object" in r]
    checks += [("down of upstream's up", u, core(u, "v1beta1"), r) for u, r in zip(ups, theirs([(u, "v1beta1") for u in ups]))]
    downs = [(r["object"], c) for r, c in zip(down, core_down) if "object" in r and "object" in c]
    back = theirs([(d, "v1beta2") for d, _mine in downs])
    checks += [("the core's up of upstream's down (reads upstream's annotation)", d, core(d, "v1beta2"), r)
               for (d, _mine), r in zip(downs, back)]
    checks += [("upstream's up of the core's down (reads the core's annotation)", c["object"], mine, r)
               for (_d, c), mine, r in zip(downs, theirs([(c["object"], "v1beta2") for _d, c in downs]), back)]
    metadata_only = [{"apiVersion": d["apiVersion"], "kind": kind,
                      "metadata": {key: value for key, value in d["metadata"].items() if key in _CONVERTED_METADATA}}
                     for d, _mine in downs]
    checks += [("up of metadata only", m, core(m, "v1beta2"), r)
               for m, r in zip(metadata_only, theirs([(m, "v1beta2") for m in metadata_only]))]

    def theirs_after(results, to):
        converted = iter(theirs([(r["object"], to) for r in results if "object" in r]))
        return [next(converted) if "object" in r else r for r in results]

    def core_after(results, to):
        return [core(r["object"], to) if "object" in r else r for r in results]

    trip, their_trip = core_after(core_up, "v1beta1"), theirs_after(up, "v1beta1")
    round_trips = [("the core's round trip v1beta1 -> v1beta2 -> v1beta1", s, mine, r)
                   for s, mine, r in zip(spokes, trip, their_trip)]
    round_trips += [("the core's round trip v1beta2 -> v1beta1 -> v1beta2", h, mine, r)
                    for h, mine, r in zip(hubs, core_after(core_down, "v1beta2"), theirs_after(down, "v1beta2"))]
    checks += [("upstream's up of the core's round trip (reads the core's annotation)", s, mine, r)
               for s, mine, r in zip(spokes, theirs_after(trip, "v1beta2"), theirs_after(their_trip, "v1beta2"))]

    # as a Go client of their version decodes them ("" and an absent string are one value there, a pointer to false
    # and an absent one are not); upstream's answers too, which may hold what no decoding gives back (a struct whose
    # slice was empty but not nil is {}, read back as unset)
    answers = [result["object"] for _name, _source, mine, their in checks + round_trips for result in (mine, their)
               if "object" in result]
    sources = [source for _name, source, _mine, _their in round_trips]
    decoded = upstream.run([{"op": "canonical", "object": obj} for obj in answers + sources])
    canonical, trip_sources = iter(decoded[:len(answers)]), [None] * len(checks) + decoded[len(answers):]
    found = []
    for (name, source, mine, their), trip_source in zip(checks + round_trips, trip_sources):
        paths = _nulls_upstream_omits(mine, their)
        mine, their = [next(canonical) if "object" in result else result for result in (mine, their)]
        paths += _diff(_comparable(mine), _comparable(their))
        if paths and trip_source is not None and _comparable(mine) == _comparable(trip_source):
            name += " (kept: the core gives its input back, upstream does not)"
        if paths:
            found.append((name, source, paths))
    checks += round_trips
    return len(checks), found


@pytest.mark.parametrize("fill", FILLS)
@pytest.mark.parametrize("kind", KINDS)
def test_the_core_converts_as_upstream_does(upstream, kind, fill):
    checked, found = differences(upstream, kind, fill)
    summary = {}
    for name, _source, paths in found:
        for path in paths:
            summary.setdefault("%s: %s" % (name, path.split(":")[0]), []).append(path)
    assert checked >= 2 * CASES  # up and down of every input at least (more where both sides convert)
    assert not found, "%d of %d checks of %s %s inputs differ from upstream:\n%s\nfirst input: %s" % (
        len(found), checked, fill, kind,
        "\n".join("%4d x %s (e.g. %s)" % (len(v), k, v[0]) for k, v in sorted(summary.items())),
        json.dumps(found[0][1])[:1500])


def test_the_comparison_sees_a_status_counter_upstream_writes(upstream):
    """The check can fail: a core that leaves out status.replicas 0 (as it did before this test) is caught."""

    def without_zero_replicas(obj, to, **kwargs):
        converted = convert_object(obj, to, **kwargs)
        if converted.get("status", {}).get("replicas") == 0:
            del converted["status"]["replicas"]
        return converted

    _checked, found = differences(upstream, "MachineSet", "upstream", count=20, convert=without_zero_replicas)
    assert any(path.startswith("status.replicas: only upstream has 0") for _name, _source, paths in found
               for path in paths), found[:3]


def test_the_comparison_sees_a_null_upstream_omits(upstream):
    """A null the core writes for an unset field is caught, although a Go client reads it as unset."""

    def with_null_paused(obj, to, **kwargs):
        converted = convert_object(obj, to, **kwargs)
        if to == "v1beta2":
            converted.setdefault("spec", {}).setdefault("paused", None)
        return converted

    _checked, found = differences(upstream, "Cluster", "sparse", count=20, convert=with_null_paused)
    assert any(path == "spec.paused: only the core has null" for name, _source, paths in found if name == "up"
               for path in paths), found[:3]


def test_the_comparison_sees_a_round_trip_keep_what_upstream_loses(upstream):
    """A core that carries v1beta1's empty clusterNetwork cidrBlocks into v1beta2 (as it did before this check) gives
    them back from its own round trip, where upstream's JSON between the steps loses them: caught, and named kept."""

    def with_empty_cidr_blocks(obj, to, **kwargs):
        converted = convert_object(obj, to, **kwargs)
        network = (obj.get("spec") or {}).get("clusterNetwork") or {}
        for key in ("pods", "services"):
            if to == "v1beta2" and (network.get(key) or {}).get("cidrBlocks") == []:
                converted["spec"]["clusterNetwork"][key] = {"cidrBlocks": []}
        return converted

    _checked, found = differences(upstream, "Cluster", "upstream", count=40, convert=with_empty_cidr_blocks)
    assert any(name.startswith("the core's round trip v1beta1 -> v1beta2 -> v1beta1 (kept")
               and path.startswith("spec.clusterNetwork.") and path.endswith('only the core has {"cidrBlocks": []}')
               for name, _source, paths in found for path in paths), found[:3]


if __name__ == "__main__":  # exploration: python -m tests.integration.conversion.test_upstream_differential [KIND...]
    import collections
    import re
    import sys

    runner = Upstream(ensure_convdiff())
    for k in sys.argv[1:] or KINDS:
        for f in FILLS:
            counts = collections.Counter()
            examples = {}
            total, differing = differences(runner, k, f, count=int(os.environ.get("N", "200")))
            for check_name, _src, diff_paths in differing:
                for p in diff_paths:
                    key = "%s | %s" % (check_name, re.sub(r"\[\d+\]", "[]", p.split(":")[0]))
                    counts[key] += 1
                    examples.setdefault(key, p)
            kept = sum(1 for check_name, _src, _paths in differing if "(kept" in check_name)
            print("== %s %s: %d checks, %d equal, %d kept, %d different" % (
                k, f, total, total - len(differing), kept, len(differing) - kept))
            for key, n in counts.most_common(40):
                print("  %5d %s\n          %s" % (n, key, examples[key][:300]))
