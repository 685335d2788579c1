"""The start of one container of a Pod run by testenv.cluster.pods: runs inside the Pod's network namespace (`ip netns
exec`, which also gives it a mount namespace of its own), gives the container a root of its own, then execs the
container's command in it.

    python -m testenv.cluster.podexec SPEC.json

SPEC: {"argv": [...], "env": {...}, "workingDir": "/", "mounts": [{"source": DIR_OR_FILE, "target": PATH,
"readOnly": bool}], "hosts": FILE, "readOnlyRootFilesystem": bool, "scratch": DIR, "imagePaths": [DIR...],
"hostname": NAME}

The container's host name is the Pod's (a UTS namespace of its own, as the kubelet gives every Pod): what a program
names itself by - controller-runtime's leader election identity is "<hostname>_<uuid>".

The root is a tmpfs holding a bind of every top-level directory of this machine (the test bed has no image file
systems: a container sees the machine's programs), the container's volumes at their mountPaths and the Pod's
/etc/hosts. A mountPath that does not exist on the machine is made in this container's view only: a missing
top-level directory in the tmpfs, a missing directory below an existing one in an overlay over it. With
readOnlyRootFilesystem every mount but the volumes is made read-only.
"""
import ctypes
import json
import os
import sys

MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
CLONE_NEWUTS = 0x04000000
_LIBC = ctypes.CDLL(None, use_errno=True)


def _mount(source, target, fstype=None, flags=0, data=None):
    if _LIBC.mount(source.encode() if source else None, target.encode(), fstype.encode() if fstype else None,
                   flags, data.encode() if data else None) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, "mount %s on %s (%s): %s" % (source, target, fstype or "bind", os.strerror(errno)))


def _top(path):
    return "/" + os.path.realpath(path).strip("/").split("/")[0]


def lay_out(spec):
    """Build the container's root under spec["scratch"]/root and chroot into it."""
    _mount(None, "/", flags=MS_REC | MS_PRIVATE)
    scratch = spec["scratch"]
    root = os.path.join(scratch, "root")
    os.makedirs(root, exist_ok=True)
    _mount("tmpfs", root, "tmpfs", 0, "mode=755")
    tops = []
    for entry in sorted(os.listdir("/")):
        host, inside = "/" + entry, os.path.join(root, entry)
        if os.path.islink(host):
            os.symlink(os.readlink(host), inside)
        elif os.path.isdir(host):
            os.mkdir(inside)
            _mount(host, inside, flags=MS_BIND | MS_REC)
            tops.append(inside)
    mounts = spec["mounts"] + [{"source": spec["hosts"], "target": "/etc/hosts", "readOnly": True}]
    overlaid = set()
    for mount in mounts:
        real = os.path.realpath(mount["target"])
        top = _top(real)
        if os.path.exists(real) or top in overlaid or not os.path.isdir(top):
            continue  # there already, made in an overlay already, or a new top-level directory in the tmpfs
        upper, work = (os.path.join(scratch, kind + top.replace("/", "_")) for kind in ("upper", "work"))
        os.makedirs(upper, exist_ok=True)
        os.makedirs(work, exist_ok=True)
        _mount("overlay", root + top, "overlay", 0, "lowerdir=%s,upperdir=%s,workdir=%s" % (top, upper, work))
        overlaid.add(top)
    for mount in mounts:
        target = root + os.path.realpath(mount["target"])
        if os.path.isdir(mount["source"]):
            os.makedirs(target, exist_ok=True)
        elif not os.path.exists(target):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "a").close()  # pylint: disable=consider-using-with
        _mount(mount["source"], target, flags=MS_BIND)
        if mount.get("readOnly"):
            _mount(None, target, flags=MS_REMOUNT | MS_BIND | MS_RDONLY)
    # the image's own files (here: the machine's Python and the proxy's venv or checkout) stay visible under a volume
    # mounted over one of their parents (an emptyDir at /tmp while the checkout is under /tmp), as an image's are
    for path in spec.get("imagePaths") or ():
        if os.path.exists(path) and not os.path.exists(root + path):
            os.makedirs(root + path, exist_ok=True)
            _mount(path, root + path, flags=MS_BIND | MS_REC)
    if spec.get("readOnlyRootFilesystem"):
        for path in [root] + tops + [root + top for top in sorted(overlaid)]:
            _mount(None, path, flags=MS_REMOUNT | MS_BIND | MS_RDONLY)
    os.chroot(root)


def set_hostname(name):
    """A UTS namespace of this container's own, named as its Pod."""
    encoded = name.encode()
    if _LIBC.unshare(CLONE_NEWUTS) != 0 or _LIBC.sethostname(encoded, len(encoded)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, "host name %s: %s" % (name, os.strerror(errno)))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as handle:
        spec = json.load(handle)
    if spec.get("hostname"):
        set_hostname(spec["hostname"])
    lay_out(spec)
    os.chdir(spec.get("workingDir") or "/")
    os.execvpe(spec["argv"][0], spec["argv"], spec["env"])


if __name__ == "__main__":
    main()
