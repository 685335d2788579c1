"""The start of one container of a Pod run by testenv.cluster.pods: runs inside the Pod's network namespace (`ip netns
exec`, which also gives it a mount namespace of its own), lays out the container's file system view (its volumes at
their mountPaths, the Pod's /etc/hosts, a read-only root when its securityContext asks for one), then execs the
container's command.

    python -m testenv.cluster.podexec SPEC.json

SPEC: {"argv": [...], "env": {...}, "workingDir": "/", "mounts": [{"source": DIR_OR_FILE, "target": PATH,
"readOnly": bool}], "hosts": FILE, "readOnlyRootFilesystem": bool, "scratch": DIR}

A mountPath that does not exist on this machine (/etc/capi-proxy, /var/run/secrets/...) gets an overlay over its
top-level directory first, so the directories made for it exist in this container's view only.
"""
import json
import os
import subprocess
import sys


def _mount(*args):
    subprocess.run(["mount", *args], check=True)


def _overlay_top(path, scratch, overlaid):
    """Overlay the top-level directory that holds `path` (once), so mkdir below it stays in this mount namespace."""
    top = "/" + os.path.realpath(path).strip("/").split("/")[0]
    if top in overlaid or top == "/":
        return
    upper = os.path.join(scratch, "upper" + top.replace("/", "_"))
    work = os.path.join(scratch, "work" + top.replace("/", "_"))
    os.makedirs(upper, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    _mount("-t", "overlay", "overlay", "-o", "lowerdir=%s,upperdir=%s,workdir=%s" % (top, upper, work), top)
    overlaid.append(top)


def lay_out(spec):
    _mount("--make-rprivate", "/")
    overlaid = []
    targets = [mount["target"] for mount in spec["mounts"]] + ["/etc/hosts"]
    for target in targets:
        if not os.path.exists(os.path.realpath(target)):
            _overlay_top(target, spec["scratch"], overlaid)
    for mount in spec["mounts"] + [{"source": spec["hosts"], "target": "/etc/hosts", "readOnly": True}]:
        target = os.path.realpath(mount["target"])
        if os.path.isdir(mount["source"]):
            os.makedirs(target, exist_ok=True)
        elif not os.path.exists(target):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "a").close()  # pylint: disable=consider-using-with
        _mount("--bind", mount["source"], target)
        if mount.get("readOnly"):
            _mount("-o", "remount,bind,ro", target)
    if spec.get("readOnlyRootFilesystem"):
        for top in ["/"] + overlaid:
            _mount("-o", "remount,bind,ro", top)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as handle:
        spec = json.load(handle)
    lay_out(spec)
    os.chdir(spec.get("workingDir") or "/")
    os.execvpe(spec["argv"][0], spec["argv"], spec["env"])


if __name__ == "__main__":
    main()
