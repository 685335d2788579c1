# Every target installs what it needs on a fresh machine (make venv is idempotent).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-installed
COLLECTION_LINK := .collections/ansible_collections/hypershift/private_capi
PYTEST_ARGS ?=
# Two workers on CI's two cores; loadfile keeps each module's local API server on one worker;
# --no-loadscope-reorder keeps tests/conftest.py's order (costliest files first) instead of xdist's tests-per-file one.
PYTEST_PARALLEL ?= -n 2 --dist loadfile --no-loadscope-reorder
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: venv demo test lint sanity unit integration bench build clean

venv: $(STAMP) $(COLLECTION_LINK)

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

$(COLLECTION_LINK):
	@mkdir -p $(dir $(COLLECTION_LINK))
	@ln -sfn ../../.. $(COLLECTION_LINK)

# The fleet demo: local API server, 6 HostedClusters (one rolls back), migrate_fleet.yml, verify_fleet.yml.
# The CAPI translation demo of the examples: ansible-playbook -i localhost, playbooks/translate_examples.yml
demo: venv
	$(BIN)/python hack/demo_fleet.py

lint: venv
	$(BIN)/ansible-lint --profile production

sanity: venv
	hack/sanity.sh

build: venv
	@rm -f hypershift-private_capi-*.tar.gz
	$(BIN)/ansible-galaxy collection build --force .

# make test = lint, sanity, then pytest (unit + integration + molecule); pytest's summary is the last line.
test: lint sanity
	$(BIN)/python -m pytest tests/unit tests/integration -p no:cacheprovider $(PYTEST_PARALLEL) $(PYTEST_ARGS)

unit: venv
	$(BIN)/python -m pytest tests/unit -p no:cacheprovider $(PYTEST_PARALLEL) $(PYTEST_ARGS)

integration: venv
	$(BIN)/python -m pytest tests/integration -p no:cacheprovider $(PYTEST_PARALLEL) $(PYTEST_ARGS)

bench: venv
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .collections .build .pytest_cache .hypothesis hypershift-private_capi-*.tar.gz
