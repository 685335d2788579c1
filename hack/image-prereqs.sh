#!/usr/bin/env bash
# What tests/integration/e2e/test_image.py needs to build and run the proxy's image on a machine without a registry:
# podman (with buildah's engine), runc and debootstrap from Debian packages (installed here when missing: root and
# apt-get), and the local Debian base image of hack/local-base-image.sh (built when missing, about 2 minutes).
# Idempotent: on a machine that has all of it, it only checks.
#   hack/image-prereqs.sh [BASE_IMAGE]    (default localhost/capi-proxy-base:bookworm)
set -euo pipefail
base="${1:-localhost/capi-proxy-base:bookworm}"
missing=()
for tool in podman buildah runc debootstrap; do command -v "$tool" > /dev/null || missing+=("$tool"); done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get > /dev/null; then
    echo "$0: missing ${missing[*]}; install them (Debian/Ubuntu: apt-get install -y podman buildah runc debootstrap)" >&2
    exit 1
  fi
  echo "$0: installing ${missing[*]} from Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends podman buildah runc debootstrap > /dev/null
fi
if ! podman image exists "$base"; then
  echo "$0: building the local base image $base (hack/local-base-image.sh)"
  "$(dirname "$0")/local-base-image.sh" "$base"
fi
