# Every target installs what it needs on a fresh machine (make venv is idempotent).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-installed
COLLECTION_LINK := .collections/ansible_collections/hypershift/private_capi
# A .pth file in the venv puts .collections on its sys.path, so `python -m capi_proxy`, the benchmarks and the tests
# import the collection with no path editing of their own.
COLLECTIONS_PTH := $(VENV)/.collections-on-path
PYTEST_ARGS ?=
# Two workers on CI's two cores (three were tried: the end-to-end file leaves one mostly idle, but the other three-way
# contention failed two timing-sensitive tests in one of two runs); loadfile keeps each module's control plane on one
# worker; --no-loadscope-reorder keeps tests/conftest.py's order (costliest files first) instead of xdist's tests-per-file one.
PYTEST_PARALLEL ?= -n 2 --dist loadfile --no-loadscope-reorder
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: venv binaries node-binaries capi-binaries monitoring-binaries kind-images proxy-venv demo test lint sanity unit integration bench build image clean

venv: $(STAMP) $(COLLECTION_LINK) $(COLLECTIONS_PTH)

# uv (pinned, from PyPI) installs the same pinned set as pip, bytecode compiled, in about a third of pip's time (17 s
# against 51 s on 2 cores with warm caches); pip does it where uv cannot be installed.
UV_VERSION := 0.13.9
$(STAMP): requirements.txt requirements-dev.txt
	@# a venv an interrupted make left half made (no pip) is made again
	@$(BIN)/python -m pip --version > /dev/null 2>&1 || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	@if $(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION); then \
		echo "$(BIN)/python -m uv pip install --compile-bytecode -r requirements-dev.txt"; \
		$(BIN)/python -m uv pip install --quiet --compile-bytecode --python $(BIN)/python -r requirements-dev.txt; \
	else \
		echo "uv $(UV_VERSION) could not be installed: pip installs the requirements"; \
		$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt; \
	fi
	@touch $@

$(COLLECTIONS_PTH): $(STAMP)
	$(BIN)/python -c 'import os, sysconfig; open(os.path.join(sysconfig.get_paths()["purelib"], "hypershift-private-capi.pth"), "w").write(os.path.abspath(".collections") + "\n")'
	@touch $@

$(COLLECTION_LINK):
	@mkdir -p $(dir $(COLLECTION_LINK))
	@ln -sfn ../../.. $(COLLECTION_LINK)

# The control plane of the tests, the demo and the benchmarks (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, KWOK): built from upstream Go modules once per version into ~/.cache/hypershift-private-capi/bin
# (about 6 min on 2 cores, Go 1.26 needed), found there afterwards; $KUBEBUILDER_ASSETS wins when it holds them.
binaries: venv
	$(BIN)/python -m testenv.cluster build

# The real node of the test bed (testenv/cluster/node.py): kubelet and kube-proxy of the same Kubernetes release and
# CoreDNS v1.12.4 with a cluster's plugins (testenv/cluster/go/coredns/main.go), built the same way (kubelet 17 s,
# kube-proxy 7 s, CoreDNS 50 s on 2 cores after kube-apiserver from empty Go caches, 2026-12-05), and the Debian packages it runs
# on (hack/node-prereqs.sh: containerd, runc, the CNI plugins, conntrack; installed when missing, as root).
node-binaries: venv
	bash hack/node-prereqs.sh
	$(BIN)/python -m testenv.cluster build kubelet kube-proxy coredns

# The real Cluster API controllers of the end-to-end tests (tests/integration/e2e, docs/e2e.md): the core manager and
# CAPD (in-memory backend) v1.14.2, built the same way into the same cache (about 6 min more on a cold machine).
capi-binaries: venv
	$(BIN)/python -m testenv.cluster build capi-manager capd-manager clusterctl capi-manager-v1beta1 capd-manager-v1beta1
	$(BIN)/python -m testenv.cluster.convdiff

# molecule's kind scenario (molecule/kind, testenv/kind.py): docker.io, debootstrap and jq from Debian
# (hack/kind-prereqs.sh, installed when missing, as root), kind v0.33.0 and kubeadm built like the rest, kind's base
# image from a Debian rootfs and its node image of v1.34.4 from the binary cache, kept as docker images (cold: about
# 3 min after node-binaries; warm: 1 s). dockerd is started for the build and stopped after it.
kind-images: venv node-binaries
	bash hack/kind-prereqs.sh
	$(BIN)/python -m testenv.kind build

# Prometheus and promtool v0.316.0 (3.16.0) of the monitoring tests (tests/integration/monitoring), built the same way
# into the same cache (about 19 min on 2 cores shared with other work; promtool 9 s after it).
monitoring-binaries: venv
	$(BIN)/python -m testenv.cluster build prometheus promtool

# The fleet demo: a real local control plane with a real node (kubelet, containerd, kube-proxy, CoreDNS), 6
# HostedClusters (one rolls back) whose cluster-api runs the real core manager's leader election in its container,
# migrate_fleet.yml, verify_fleet.yml, and a real Prometheus scraping the fleet exporter. It builds what it runs and
# nothing more: no KWOK (every Pod runs on the real node), no promtool, the core manager alone of capi-binaries' five;
# Prometheus, needed at its end only, is built by the demo in the background at nice 19 (hack/demo_fleet.py
# BackgroundBuild). DEMO_ARGS=--workdir DIR runs a second demo beside a running one.
# The CAPI translation demo of the examples: ansible-playbook -i localhost, playbooks/translate_examples.yml
DEMO_BINARIES := kube-apiserver kube-controller-manager kube-scheduler etcd kubelet kube-proxy coredns capi-manager
demo: venv proxy-venv
	bash hack/node-prereqs.sh
	$(BIN)/python -m testenv.cluster build $(DEMO_BINARIES)
	$(BIN)/python hack/demo_fleet.py $(DEMO_ARGS)

lint: venv
	$(BIN)/ansible-lint --profile production

# The collection as a user installs it (hack/artifact_checks.py): the tarball built and installed into a fresh
# collections path, then on that copy ansible-test sanity with the oldest and newest supported ansible-core (2.16 on
# Python 3.11, 2.20 on Python 3.14 from a Go module), galaxy-importer, antsibull-docs and antsibull-changelog lint.
# Their venvs and the Python 3.14 tree are cached per version in ~/.cache/hypershift-private-capi.
sanity: venv
	$(BIN)/python hack/artifact_checks.py all

build: venv
	@rm -f hypershift-private_capi-*.tar.gz
	$(BIN)/ansible-galaxy collection build --force .

# The proxy image (Containerfile) from the built collection tarball alone (the build context holds nothing else),
# tagged with the collection's version; built by CONTAINER_ENGINE or else the first of podman, buildah and docker
# that runs. IMAGE= renames it; BASE_IMAGE= replaces the UBI base (hack/local-base-image.sh makes a Debian one with
# no registry). Rootless or in a container: STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot make image (podman, buildah).
COLLECTION_VERSION := $(shell sed -n 's/^version: *//p' galaxy.yml)
IMAGE ?= quay.io/hypershift/capi-proxy:$(COLLECTION_VERSION)
BASE_IMAGE ?=
CONTAINER_ENGINE ?=
image: build
	@engine="$(CONTAINER_ENGINE)"; \
	if [ -z "$$engine" ]; then for candidate in podman buildah docker; do \
		if command -v $$candidate > /dev/null && $$candidate info > /dev/null 2>&1; then engine=$$candidate; break; fi; \
	done; fi; \
	if [ -z "$$engine" ]; then echo "make image: no container engine runs (podman, buildah or docker; CONTAINER_ENGINE= names one)" >&2; exit 1; fi; \
	rm -rf .build/image && mkdir -p .build/image && cp hypershift-private_capi-$(COLLECTION_VERSION).tar.gz .build/image/; \
	set -x; $$engine build -f Containerfile -t $(IMAGE) --build-arg VERSION=$(COLLECTION_VERSION) \
		$(if $(BASE_IMAGE),--build-arg BASE_IMAGE=$(BASE_IMAGE)) .build/image

# The proxy as a user installs it: the package of the built collection tarball (pyproject.toml), alone in its own
# venv. The test bed runs its capi-proxy in the Pods of the proxy's image (testenv/cluster/pods.py), so the sidecars
# and the conversion shim of the tests and the demo are the installed artifact, not the checkout. Rebuilt when the
# proxy's sources change.
PROXY_VENV := .build/proxy-venv
PROXY_SOURCES := $(wildcard capi_proxy/*.py capi_proxy/*/*.py plugins/module_utils/translate/*.py) plugins/module_utils/errors.py \
	plugins/module_utils/messages.py plugins/module_utils/merge_patch.py plugins/module_utils/contract.py plugins/module_utils/hypershift.py \
	plugins/module_utils/state/machine.py pyproject.toml galaxy.yml requirements.txt
proxy-venv: $(PROXY_VENV)/.installed
$(PROXY_VENV)/.installed: $(PROXY_SOURCES) | venv
	@rm -rf .build/proxy-dist .build/proxy-pkg $(PROXY_VENV) && mkdir -p .build/proxy-dist .build/proxy-pkg
	$(BIN)/ansible-galaxy collection build --force --output-path .build/proxy-dist . > /dev/null
	$(BIN)/python -m tarfile -e .build/proxy-dist/hypershift-private_capi-$(COLLECTION_VERSION).tar.gz .build/proxy-pkg
	$(BIN)/python -m venv $(PROXY_VENV)
	@if $(BIN)/python -m uv --version > /dev/null 2>&1; then \
		$(BIN)/python -m uv pip install --quiet --python $(PROXY_VENV)/bin/python -c requirements.txt ./.build/proxy-pkg; \
	else $(PROXY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -c requirements.txt ./.build/proxy-pkg; fi
	$(PROXY_VENV)/bin/capi-proxy --help > /dev/null
	@touch $@

# make test = pytest (unit + integration + molecule) on two workers, and beside it, each in its own process: the
# end-to-end file (tests/integration/e2e: about 17 minutes, mostly waiting on the real CAPI controllers, so it would
# hold a worker idle) followed by AFTER_E2E, ansible-lint and ansible-test sanity (about one core between them, for
# their first minutes). AFTER_E2E are files that time nothing (about 10 minutes of one worker): in the e2e process
# they run while the two workers finish the rest, instead of lengthening them (warm CI of 2a003ed, all files on the
# workers: pytest 25 min 17 s, the e2e process done after 16 min 51 s). Their logs follow once pytest has ended;
# the failed tests' names (pytest's short summary) and the summaries are repeated as the last lines.
AFTER_E2E := tests/integration/collection/test_molecule.py tests/integration/collection/test_ansible_runner.py \
	tests/integration/fleet/test_check_mode.py tests/integration/fleet/test_fleet_unreachable.py \
	tests/integration/fleet/test_killed_run_fenced.py tests/integration/fleet/test_leader_handover.py
test: binaries node-binaries capi-binaries monitoring-binaries kind-images proxy-venv
	@mkdir -p .build && rm -f .build/lint.rc .build/sanity.rc .build/e2e.rc
	@set +e; \
	( $(MAKE) --no-print-directory lint > .build/lint.log 2>&1; echo $$? > .build/lint.rc ) & \
	( $(MAKE) --no-print-directory sanity > .build/sanity.log 2>&1; echo $$? > .build/sanity.rc ) & \
	( $(BIN)/python -m pytest tests/integration/e2e $(AFTER_E2E) -p no:cacheprovider $(PYTEST_ARGS) \
	  > .build/e2e.log 2>&1; echo $$? > .build/e2e.rc ) & \
	$(BIN)/python -m pytest tests/unit tests/integration --ignore=tests/integration/e2e \
		$(addprefix --ignore=,$(AFTER_E2E)) -p no:cacheprovider \
		$(PYTEST_PARALLEL) $(PYTEST_ARGS) 2>&1 | tee .build/pytest.log; status=$${PIPESTATUS[0]}; \
	wait; \
	for step in e2e lint sanity; do \
		echo "== $$step (log: .build/$$step.log)"; cat .build/$$step.log; \
		code=$$(cat .build/$$step.rc 2>/dev/null || echo 1); \
		if [ "$$code" != 0 ]; then echo "== $$step FAILED (exit $$code)"; status=1; fi; \
	done; \
	grep -hE '^(FAILED|ERROR) ' .build/pytest.log .build/e2e.log; \
	tail -n 1 .build/e2e.log; tail -n 1 .build/pytest.log; exit $$status

unit: venv
	$(BIN)/python -m pytest tests/unit -p no:cacheprovider $(PYTEST_PARALLEL) $(PYTEST_ARGS)

integration: binaries capi-binaries monitoring-binaries proxy-venv
	$(BIN)/python -m pytest tests/integration -p no:cacheprovider $(PYTEST_PARALLEL) $(PYTEST_ARGS)

# GOGC: the test bed's Go components at Go's default (testenv/cluster/cluster.py TESTBED_GOGC is the tests' 400), so
# that the machine's memory the fleet bench reports is what they use by default
bench: binaries proxy-venv
	GOGC=$${GOGC:-100} $(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .collections .build .pytest_cache .hypothesis hypershift-private_capi-*.tar.gz
