# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The migration's strategies and what each does, one procedure per strategy (pure; imports only the collection's leaf
modules, so the filter migrate_strategy loads where ansible-core alone is installed).

zero_stop: the controllers never stop - the proxy sidecars go in ahead in pass-through, the window pauses the sources,
copies, flips every sidecar of the namespace to translate and unpauses the copies (hcp/window.py, hcp/flip.py).
scale_down: the controllers stop for the window and start with the sidecar, translating.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import STANDARD_SUFFIX

ZERO_STOP, SCALE_DOWN = "zero_stop", "scale_down"
STRATEGIES = (ZERO_STOP, SCALE_DOWN)


class StrategyError(PrivateCapiError, ValueError):
    """A strategy that is not one of STRATEGIES; the message names the variable."""


def strategy_steps(strategy):
    """What the migrate role does for a strategy (the role follows this): proxy_ahead (the sidecars put in, in
    pass-through and rolled out once the operator is fenced, before anything is paused), quiesce_pause_group (the
    group hcp_quiesce pauses before the window; empty: it only fences), window_pause_group (the group the window
    pauses itself), fence_mark (the name of the phase in which hcp_quiesce runs: "fence" where it only fences, "pause"
    where it pauses too), and the api_proxy role's run after it: proxy_steps (its private_capi_proxy_steps: "all" puts
    the sidecars in, "prepare" computes their patches for the window to send), proxy_mode (the mode a new mode
    ConfigMap starts in) and proxy_mark (the name of that phase)."""
    if strategy not in STRATEGIES:
        raise StrategyError("the strategy must be one of %s, got %r (private_capi_migrate_strategy)"
                            % (", ".join(STRATEGIES), strategy))
    zero_stop = strategy == ZERO_STOP
    return {"strategy": strategy, "proxy_ahead": zero_stop,
            "quiesce_pause_group": "" if zero_stop else STANDARD_SUFFIX,
            "window_pause_group": STANDARD_SUFFIX if zero_stop else "", "fence_mark": "fence" if zero_stop else "pause",
            "proxy_steps": "all" if zero_stop else "prepare", "proxy_mode": "passthrough" if zero_stop else "translate",
            "proxy_mark": "sidecar" if zero_stop else "prepare"}
