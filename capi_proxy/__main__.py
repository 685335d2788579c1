"""Command line: `python -m capi_proxy [proxy options]`, `python -m capi_proxy shim [shim options]`,
`python -m capi_proxy exporter [exporter options]` or `python -m capi_proxy wait-ready --port PORT` (the sidecar's
postStart hook)."""
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "shim":
        from capi_proxy.shim import run_shim  # pylint: disable=import-outside-toplevel
        return run_shim(argv[1:])
    if argv and argv[0] == "exporter":
        from capi_proxy.exporter import run_exporter  # pylint: disable=import-outside-toplevel
        return run_exporter(argv[1:])
    if argv and argv[0] == "wait-ready":
        from capi_proxy.waitready import run_wait_ready  # pylint: disable=import-outside-toplevel
        return run_wait_ready(argv[1:])
    from capi_proxy.proxy.program import run_proxy  # pylint: disable=import-outside-toplevel
    return run_proxy(argv)


if __name__ == "__main__":
    sys.exit(main())
