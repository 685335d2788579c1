#!/usr/bin/env bash
# What the test bed's real node (testenv/cluster/node.py: kubelet v1.34.4 with containerd and runc) needs from the
# machine: root, the Debian packages containerd, runc, containernetworking-plugins (the CNI bridge, host-local,
# loopback and portmap plugins), iptables, iproute2 and conntrack (installed here when missing, with apt-get), and
# the cgroup v1 controllers the kubelet writes (cpu, cpuset, memory, pids). containerd is not started as a service:
# each node runs its own instance, with its own state, in its own network namespace.
# Idempotent: on a machine that has all of it, it only checks. Exit 1 names what is missing and how to get it, and
# leaves nothing half set up (it installs packages, nothing else).
#   hack/node-prereqs.sh
set -euo pipefail
# shellcheck source=hack/apt-missing.sh
. "$(dirname "$0")/apt-missing.sh"
me="$0"
fail() { echo "$me: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "a real node runs containers: run as root (the kubelet, containerd and runc need it)"
declare -A package_of=([containerd]=containerd [containerd-shim-runc-v2]=containerd [runc]=runc
                       [iptables]=iptables [ip]=iproute2 [conntrack]=conntrack)
missing=()
for tool in containerd containerd-shim-runc-v2 runc iptables ip conntrack; do
  command -v "$tool" > /dev/null || missing+=("${package_of[$tool]}")
done
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] \
  || missing+=(containernetworking-plugins)
install_missing ${missing[@]+"${missing[@]}"}
for controller in cpu cpuset memory pids; do
  [ -w "/sys/fs/cgroup/$controller" ] || [ -w /sys/fs/cgroup/cgroup.subtree_control ] \
    || fail "cgroup controller $controller is not writable at /sys/fs/cgroup/$controller: the kubelet puts each Pod in cgroups there"
done
[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] || modprobe br_netfilter 2> /dev/null \
  || fail "/proc/sys/net/bridge/bridge-nf-call-iptables is missing (module br_netfilter): kube-proxy's rules must see bridged Pod traffic"
echo "$me: ok (containerd $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}'))"
