#!/usr/bin/env bash
# What molecule's kind scenario (molecule/kind, testenv/kind.py) needs from the machine: root, and from Debian packages
# docker.io (dockerd and the docker CLI: kind's primary provider; its podman provider is still experimental),
# debootstrap (kind's base image is a Debian rootfs made here, nothing is pulled) and jq (the runc wrapper of a VM
# without CAP_SYS_RESOURCE), installed here when missing with apt-get. dockerd is not started as a service:
# testenv.kind starts it when it needs it and stops it once no container is left.
# Idempotent: on a machine that has all of it, it only checks. Exit 1 names what is missing and how to get it, and
# leaves nothing half set up (it installs packages, nothing else).
#   hack/kind-prereqs.sh
set -euo pipefail
# shellcheck source=hack/apt-missing.sh
. "$(dirname "$0")/apt-missing.sh"
me="$0"
fail() { echo "$me: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "kind's node is a privileged container and its base image a debootstrap rootfs: run as root"
declare -A package_of=([dockerd]=docker.io [docker]=docker.io [debootstrap]=debootstrap [jq]=jq)
missing=()
for tool in dockerd docker debootstrap jq; do
  command -v "$tool" > /dev/null || missing+=("${package_of[$tool]}")
done
install_missing ${missing[@]+"${missing[@]}"}
echo "$me: ok ($(dockerd --version), debootstrap $(dpkg-query -W -f '${Version}' debootstrap 2> /dev/null || echo '?'))"
