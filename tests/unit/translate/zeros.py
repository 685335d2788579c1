"""Comparing conversion round trips as upstream does them: upstream's up-conversion writes some zero values an
object did not have (status.replicas 0 and the deprecated counters of MachineSet/MachineDeployment/MachinePool, a
failure domain's controlPlane false, the v1beta1 status bools a down-conversion always writes). A round trip may add
those, never change or drop a value: without_added_zeros(result, original) removes only what result adds and is a
Go zero value (checked case by case against upstream in tests/integration/conversion)."""

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_common import is_go_zero


def without_added_zeros(result, original):
    if isinstance(result, dict) and isinstance(original, dict):
        return {key: without_added_zeros(value, original.get(key)) for key, value in result.items()
                if key in original or not is_go_zero(value)}
    if isinstance(result, list) and isinstance(original, list) and len(result) == len(original):
        return [without_added_zeros(a, b) for a, b in zip(result, original)]
    return result
