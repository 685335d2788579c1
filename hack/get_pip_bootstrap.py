"""Offline stand-in for ansible-test's pip bootstrap script (get-pip-<version>.py).

ansible-test downloads that script from a host that is not reachable here; `make sanity`
copies this file to ~/.ansible/test/cache/get_pip_<version>.py instead. It is run by
ansible-test's quiet_pip.py with pip's options and the pinned packages (e.g. pip==24.2)
as arguments: bring pip in with ensurepip, then install the pinned version from PyPI.
"""
import subprocess
import sys

GET_PIP_ONLY_OPTIONS = {"--no-setuptools", "--no-wheel"}


def main():
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
    args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_OPTIONS]
    subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)


if __name__ == "__main__":
    main()
