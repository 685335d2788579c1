// CoreDNS v1.12.4 (go.mod) with the plugins of a Kubernetes cluster's DNS and nothing else: kubeadm's default
// Corefile (errors, health, ready, kubernetes, prometheus, forward, cache, loop, reload, loadbalance, as kind's
// node runs it), bind (testenv/cluster/node.py's Corefile: bind, errors, kubernetes), log, and whoami (CoreDNS'
// answer with no Corefile). Its upstream main (github.com/coredns/coredns/coredns.go) imports core/plugin, every
// plugin of plugin.cfg, which brings the AWS, Azure, Google Cloud, etcd and tracing SDKs: a cold build took 96 s on
// 2 cores (0d0d870's cold make demo, 2026-12-05), this one 50 s (the same, 7ed799d). The plugins keep upstream's
// order (dnsserver.Directives, untouched); a Corefile naming another plugin is refused at start ("missing a plugin?").
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/whoami"
)

func main() {
	coremain.Run()
}
