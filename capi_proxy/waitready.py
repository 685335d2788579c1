"""`capi-proxy wait-ready`: the sidecar's postStart hook. It returns once the proxy on 127.0.0.1:PORT answers 200 on
/readyz (its mode read, the API server reachable), or after --timeout seconds whatever it answers.

The kubelet starts a Pod's containers one after the other in their order, and does not start the next one before the
previous one's postStart hook has returned (k8s.io/kubernetes v1.34.4 pkg/kubelet/kuberuntime: SyncPod starts
ContainersToStart in a loop; startContainer runs the PostStart handler before it returns). The sidecar is the Pod's
first container, so the CAPI manager starts only once its proxy answers: without the hook the v1.14.2 managers asked
for the server version before the sidecar had read its mode ConfigMap, got 503 and exited, and the kubelet restarted
them once or twice in every new Pod (found on the real node, 2026-12-04). After the timeout it returns 0 all the
same, so that the main containers start as they would without it (a hook that fails makes the kubelet kill the
sidecar). Standard library only: the hook runs beside the proxy in its container's memory limit.
"""
import argparse
import http.client
import sys
import time

from capi_proxy.cli import positive


def ready(port, request_timeout):
    """Whether http://127.0.0.1:port/readyz answers 200 (any failure to connect or read: not yet)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=request_timeout)
    try:
        connection.request("GET", "/readyz")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def wait_ready(port, timeout, interval=0.2, clock=time.monotonic, sleep=time.sleep, probe=ready):
    """Poll until ready or timeout seconds have passed; returns (ready, seconds waited)."""
    start = clock()
    while True:
        if probe(port, min(5.0, max(0.5, timeout))):
            return True, clock() - start
        waited = clock() - start
        if waited >= timeout:
            return False, waited
        sleep(min(interval, timeout - waited))


def run_wait_ready(argv):
    parser = argparse.ArgumentParser(
        prog="capi-proxy wait-ready",
        description="Wait until the proxy on 127.0.0.1:PORT answers /readyz (the sidecar's postStart hook); exit 0 "
                    "when it does or when the timeout has passed.")
    parser.add_argument("--port", type=positive(int), required=True, help="the proxy's listening port on loopback")
    parser.add_argument("--timeout", type=positive(float), default=60.0,
                        help="seconds to wait at most (default 60); the hook returns 0 after them all the same")
    args = parser.parse_args(argv)
    is_ready, waited = wait_ready(args.port, args.timeout)
    if is_ready:
        print("capi-proxy on 127.0.0.1:%d ready after %.1f s" % (args.port, waited), file=sys.stderr)
    else:
        print("capi-proxy on 127.0.0.1:%d not ready after %.1f s; the other containers start all the same (see the "
              "sidecar's log for why)" % (args.port, waited), file=sys.stderr)
    return 0
