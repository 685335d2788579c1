"""Offline stand-in for ansible-test's pip bootstrap script (get-pip-<version>.py).

ansible-test downloads that script from a host that is not reachable here; hack/artifact_checks.py copies this file
to ~/.ansible/test/cache/get_pip_<version>.py instead, with the pip wheel of that version beside it. It is run by
ansible-test's quiet_pip.py with pip's options and the pinned packages (e.g. pip==24.2) as arguments: bring pip in
with ensurepip, or from that wheel where the interpreter has no ensurepip (python-build-standalone trees without it),
then install the pinned versions from PyPI.
"""
import glob
import os
import subprocess
import sys

GET_PIP_ONLY_OPTIONS = {"--no-setuptools", "--no-wheel"}


def main():
    args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_OPTIONS]
    try:
        import ensurepip  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
    except ImportError:
        wheels = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pip-*.whl")))
        if not wheels:
            sys.exit("no ensurepip in %s and no pip wheel beside %s" % (sys.executable, __file__))
        # a pip wheel runs as a zip application: pip installs the pinned pip with itself
        subprocess.check_call([sys.executable, os.path.join(wheels[-1], "pip"), "install"] + args)
        return
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
    subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)


if __name__ == "__main__":
    main()
