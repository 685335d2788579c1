#!/usr/bin/env bash
# ansible-test sanity on a copy of the collection laid out as ansible_collections/hypershift/private_capi
# (ansible-test needs that path), with kubernetes.core beside it for the import and doc tests.
# Each run gets its own copy, so concurrent runs never step on each other.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="$repo/.venv/bin/python"
pip_version=24_2   # ansible-test 2.19 bootstraps pip 24.2: pre-seed its get-pip script (the download host is unreachable)
mkdir -p "$HOME/.ansible/test/cache" "$repo/.build"
cp "$repo/hack/get_pip_bootstrap.py" "$HOME/.ansible/test/cache/get_pip_${pip_version}.py"
work="$(mktemp -d "$repo/.build/sanity.XXXXXX")"
trap 'rm -rf "$work"' EXIT
root="$work/ansible_collections/hypershift/private_capi"
mkdir -p "$root" "$work/ansible_collections/kubernetes"
(cd "$repo" && git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} "$root/")
cp -r "$("$python" -c 'import ansible_collections.kubernetes.core as c; print(list(c.__path__)[0])')" "$work/ansible_collections/kubernetes/core"
cd "$root"
git init -q && git add -A
"$repo/.venv/bin/ansible-test" sanity --requirements --color no \
  --python "$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" "$@"
