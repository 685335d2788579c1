# Every target installs what it needs on a fresh machine (make venv is idempotent).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-installed
COLLECTION_LINK := .collections/ansible_collections/hypershift/private_capi
SANITY_ROOT := .build/sanity/ansible_collections/hypershift/private_capi
ANSIBLE_TEST_PIP := 24_2
PYTEST_ARGS ?=
# Two workers on CI's two cores; loadfile keeps each module's local API server on one worker.
PYTEST_PARALLEL ?= -n 2 --dist loadfile
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

demo: venv
	$(BIN)/ansible-playbook -i localhost, playbooks/translate_examples.yml

lint: venv
	$(BIN)/ansible-lint --profile production

sanity: venv
	@mkdir -p $(HOME)/.ansible/test/cache
	@cp hack/get_pip_bootstrap.py $(HOME)/.ansible/test/cache/get_pip_$(ANSIBLE_TEST_PIP).py
	@rm -rf .build/sanity && mkdir -p $(SANITY_ROOT)
	@git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} $(SANITY_ROOT)/
	@# dependencies (kubernetes.core) must sit beside the collection under test for the import and doc tests
	@mkdir -p .build/sanity/ansible_collections/kubernetes
	@cp -r "$$($(BIN)/python -c 'import ansible_collections.kubernetes.core as c; print(list(c.__path__)[0])')" \
	  .build/sanity/ansible_collections/kubernetes/core
	cd $(SANITY_ROOT) && git init -q && git add -A && \
	  $(CURDIR)/$(BIN)/ansible-test sanity --requirements --python $$($(CURDIR)/$(BIN)/python -c 'import sys;print("%d.%d" % sys.version_info[:2])') --color no

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
