# Sourced by hack/node-prereqs.sh and hack/kind-prereqs.sh: install_missing PACKAGE... installs the Debian packages
# named (duplicates dropped) with apt-get, or fails naming them and the command that installs them where there is no
# apt-get. No service is started (these VMs have no systemd; the tests start what they run).
install_missing() {
  [ "$#" -gt 0 ] || return 0
  local packages
  mapfile -t packages < <(printf '%s\n' "$@" | sort -u)
  if ! command -v apt-get > /dev/null; then
    echo "$0: missing ${packages[*]}; install them (Debian/Ubuntu package names: apt-get install ${packages[*]})" >&2
    exit 1
  fi
  echo "$0: installing ${packages[*]} from Debian packages"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" > /dev/null
}
