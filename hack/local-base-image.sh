#!/usr/bin/env bash
# A base for the proxy's Containerfile made with no container registry: Debian bookworm with python3 and its venv
# module, from a Debian mirror (debootstrap), committed with buildah from scratch. For machines that reach a Debian
# mirror and PyPI but no registry (the Containerfile's UBI base comes from registry.access.redhat.com); the image
# built on it is for local use (tests, kind), not to publish: publish the UBI one (README, "The proxy image").
#
#   hack/local-base-image.sh [IMAGE]        (default localhost/capi-proxy-base:bookworm; needs root)
#   BUILDAH_ISOLATION=chroot make image BASE_IMAGE=localhost/capi-proxy-base:bookworm
#   buildah run --isolation chroot "$(buildah from quay.io/hypershift/capi-proxy:1.0.0)" -- capi-proxy --help
# (in a VM or container that lacks CAP_SYS_RESOURCE and has hybrid cgroups, podman run works with runc and lowered
# limits: podman run --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 IMAGE --help)
#
# The certificate authorities added to this machine's trust store (/usr/local/share/ca-certificates/*.crt, e.g. a
# TLS-inspecting egress proxy's) are trusted in the base too, so pip inside the build reaches PyPI as the host does;
# LOCAL_CA_DIR= names another directory, LOCAL_CA_DIR=none adds none. DEBIAN_MIRROR= picks the mirror.
# apt-get install -y debootstrap buildah (Debian/Ubuntu) gives the tools. About 2 minutes (debootstrap) on 2 cores.
set -euo pipefail
image="${1:-localhost/capi-proxy-base:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
ca_dir="${LOCAL_CA_DIR:-/usr/local/share/ca-certificates}"
for tool in debootstrap buildah; do
  command -v "$tool" > /dev/null || { echo "$0: no $tool (apt-get install -y debootstrap buildah)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "$0: debootstrap needs root" >&2; exit 1; }

work="$(mktemp -d)"
container=""
cleanup() {
  [ -z "$container" ] || buildah rm "$container" > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
rootfs="$work/rootfs"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$rootfs" "$mirror"
if [ "$ca_dir" != none ] && compgen -G "$ca_dir/*.crt" > /dev/null; then
  cp "$ca_dir"/*.crt "$rootfs/usr/local/share/ca-certificates/"
  chroot "$rootfs" update-ca-certificates > /dev/null
fi
# What a container needs nothing of: apt's downloaded lists and packages, documentation.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* \
  "$rootfs"/usr/share/info/*
# /dev, /proc and /sys are the container runtime's; a tarball keeps owners, modes and links as debootstrap made them.
tar -C "$rootfs" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf "$work/rootfs.tar" .

container="$(buildah from scratch)"
buildah add "$container" "$work/rootfs.tar" /
buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
  --cmd /usr/bin/python3 --label org.opencontainers.image.description="Debian bookworm + python3 (local base)" \
  "$container"
buildah commit --rm "$container" "$image"
container=""
echo "built $image: make image BASE_IMAGE=$image (BUILDAH_ISOLATION=chroot where the OCI runtime cannot run)"
