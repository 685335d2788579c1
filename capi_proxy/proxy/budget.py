"""One bound on the body bytes all requests in flight hold at once (request bodies, API server answers, their
translations), so that many concurrent large requests cannot take the sidecar's memory with them.

A request that would pass the bound while other requests hold bytes is refused with 429 and Retry-After
(client-go and kubectl retry those): before anything is sent upstream when it is its own body, and only for
reads when it is the answer (a write the API server has done is always answered). A request alone may pass
the bound, so one body larger than the budget still goes through.
"""
from capi_proxy.errors import ProxyError

DEFAULT_MAX_INFLIGHT_BYTES = 64 * 1024 * 1024
RETRY_AFTER_SECONDS = 1


class ByteBudget(object):
    def __init__(self, capacity=DEFAULT_MAX_INFLIGHT_BYTES, on_change=None, on_refusal=None):
        self.capacity = capacity
        self.used = 0
        self._on_change = on_change
        self._on_refusal = on_refusal

    def hold(self):
        return Hold(self)

    def _adjust(self, amount):
        self.used += amount
        if self._on_change is not None:
            self._on_change(self.used)


class Hold(object):
    """The bytes one request holds; release() once its answer is written."""

    __slots__ = ("budget", "held")

    def __init__(self, budget):
        self.budget = budget
        self.held = 0

    def take(self, amount, refusable=True):
        """Count amount more bytes; ProxyError 429 if refusable and the budget cannot hold them."""
        budget = self.budget
        others = budget.used - self.held
        if refusable and others > 0 and budget.used + amount > budget.capacity:
            if budget._on_refusal is not None:  # pylint: disable=protected-access
                budget._on_refusal()  # pylint: disable=protected-access
            self.release()
            raise ProxyError(429, "the proxy holds %d bytes of request and response bodies for other requests and "
                                  "this one needs %d more, past its limit of %d (--max-inflight-bytes); retry in %d s"
                             % (others, self.held + amount, budget.capacity, RETRY_AFTER_SECONDS), "TooManyRequests")
        self.held += amount
        budget._adjust(amount)  # pylint: disable=protected-access

    def shrink_to(self, amount):
        """Give back what was taken past amount: the bodies of an attempt that is over (an adapted patch's read and
        write before it retries a conflict), so that retries do not add up against the budget."""
        if self.held > amount:
            self.budget._adjust(amount - self.held)  # pylint: disable=protected-access
            self.held = amount

    def release(self):
        if self.held:
            self.budget._adjust(-self.held)  # pylint: disable=protected-access
            self.held = 0
