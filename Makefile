# One entry point for the demo, the tests and CI. Every target installs what it
# needs: a fresh machine only needs Python 3.11 and Go (for the control plane).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.deps-installed
COLLECTION_LINK := .state/collections/ansible_collections/applyset/kubernetes
export PATH := $(abspath $(VENV))/bin:$(PATH)
export ANSIBLE_CONFIG := $(abspath ansible.cfg)
# Python keeps the compiled code of the repository's files in .state/pycache, never beside them. The
# tests start hundreds of Python processes that import the core and the test helpers from source
# (the fault sweep's engine drivers, the warm servers); where PYTHONDONTWRITEBYTECODE is set, as on
# this machine, each compiled that code again (the core: 0.65 s of CPU, 0.23 s from .state/pycache).
export PYTHONPYCACHEPREFIX := $(abspath .state/pycache)
export PYTHONDONTWRITEBYTECODE :=

.PHONY: deps binaries helm cluster-up cluster-down demo test unit integration sweeps lint typecheck sanity bench chromium clean readme-check

# Against an existing cluster (APPLYSET_TEST_KUBECONFIG) the tests need no local
# control plane, so nothing is built.
ifeq ($(strip $(APPLYSET_TEST_KUBECONFIG)),)
TEST_CLUSTER := binaries
else
TEST_CLUSTER := deps
endif
# The chart tests render with helm 3 and helm 4 built from their Go modules (hack/controlplane/helm3,
# helm4), unless APPLYSET_TEST_HELM3 and APPLYSET_TEST_HELM4 name ready-made ones.
# Both are built in one go, so that the control plane's and helm's builds fill the cores together.
ifeq ($(and $(strip $(APPLYSET_TEST_HELM3)),$(strip $(APPLYSET_TEST_HELM4))),)
ifeq ($(strip $(APPLYSET_TEST_KUBECONFIG)),)
TEST_CLUSTER := helm
else
TEST_CLUSTER += helm
endif
endif

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

$(COLLECTION_LINK):
	mkdir -p $(dir $@)
	ln -sfn ../../../.. $@

deps: $(STAMP) $(COLLECTION_LINK)

binaries: deps
	hack/local-cluster build

# helm3 and helm4 (v3.22.0, v4.3.1) into the control plane's cache, with the control plane's
# binaries (all in one build); prints every binary's path.
helm: deps
	hack/local-cluster build --helm

cluster-up: deps
	hack/local-cluster up

cluster-down:
	hack/local-cluster down

# The README's demo: start the local control plane and run the main job twice;
# the second run leaves the example's banner ConfigMap out, so it is pruned.
demo: cluster-up
	KUBECONFIG=$$(hack/local-cluster kubeconfig) ansible-playbook playbooks/deploy.yml
	KUBECONFIG=$$(hack/local-cluster kubeconfig) ansible-playbook playbooks/deploy.yml -e shop_without_banner=true

# The README's quickstart, run as written on a fresh clone with a control plane of its own.
readme-check:
	hack/readme-check

# ansible-lint (production profile) and the execution environment definition; the type check and
# the core's shape (sizes, layers, no re-export) too.
lint: deps typecheck
	hack/lint
	$(PY) hack/code_shape.py --limits

# mypy over the core and the plugins, imported as Ansible imports them (mypy.ini).
typecheck: deps
	$(PY) -m mypy -p ansible_collections.applyset.kubernetes.plugins

# ansible-test sanity on the collection as ansible-galaxy builds it (offline but for PyPI).
sanity: deps
	hack/sanity

# Side-by-side benchmark against kubectl, kpt and kubernetes.core (not a test).
bench: binaries
	benchmarks/run

# Headless Chromium from Debian's packages: tests/integration/test_fleet.py takes a screenshot
# of the fleet audit page with it. Best effort: without root or apt-get that one step skips
# (with the reason); every other check of the page still runs.
chromium:
	@command -v chromium >/dev/null 2>&1 && echo "chromium: $$(command -v chromium)" || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } \
	      || echo "make chromium: apt-get failed; the fleet test will skip its screenshot"; \
	  else echo "make chromium: needs root and apt-get; the fleet test will skip its screenshot"; fi; }

# Unit tests under coverage.py: the core library must stay at least 90 % covered by them alone.
unit: deps
	$(PY) -m coverage run --source=plugins/module_utils/applyset -m pytest tests/unit tests/hack tests/benchmarks -q
	$(PY) -m coverage report --fail-under=90

# The suite runs on TEST_WORKERS pytest-xdist workers (measured on 2 cores: docs/testing.md), a test
# file to a worker (module fixtures set up once); each worker that runs integration tests starts a
# control plane of its own, so tests that change cluster-wide state (CRDs, webhooks, flow control,
# the server itself) never meet another file's tests. Against an existing cluster
# (APPLYSET_TEST_KUBECONFIG) the files share it, so they run one after another.
TEST_WORKERS ?= 3
ifeq ($(strip $(APPLYSET_TEST_KUBECONFIG)),)
XDIST := -n $(TEST_WORKERS) --dist loadfile
else
XDIST := -p no:xdist
endif

integration: $(TEST_CLUSTER)
	$(PY) -m pytest tests/integration -q -ra $(XDIST)

# All tests, with the time per file, the slowest tests, the budget (tests/conftest.py) and no skip
# that the suite does not allow. Each integration worker starts its own control plane (or uses
# APPLYSET_TEST_KUBECONFIG) and stops it at the end.
test: $(TEST_CLUSTER)
	APPLYSET_WHOLE_SUITE=1 $(PY) -m pytest tests/unit tests/hack tests/benchmarks tests/integration -q -ra $(XDIST)

# The full fault sweep (every k of every scenario) and 20 rounds of each concurrency race: what the
# suite samples, whole (docs/testing.md). Not part of make test or CI. Its 15 tests are spread one by
# one over the workers (two files a worker each would leave the others idle for hours).
ifeq ($(strip $(APPLYSET_TEST_KUBECONFIG)),)
SWEEP_XDIST := -n $(TEST_WORKERS) --dist load
else
SWEEP_XDIST := -p no:xdist
endif
sweeps: $(TEST_CLUSTER)
	APPLYSET_FAULT_SWEEP=full APPLYSET_CONCURRENCY_ROUNDS=20 $(PY) -m pytest tests/integration/test_faults.py \
	  tests/integration/test_concurrency.py -q -ra $(SWEEP_XDIST)

# The Python x ansible-core matrix (noxfile.py, docs/compatibility.md): unit tests and the
# integration smoke test on every combination ansible-core supports on the controller, and
# ansible-test sanity on the oldest and newest core. matrix-corners (for CI) runs only the
# oldest and the newest combination and sanity on both.
.PHONY: matrix matrix-corners
matrix: $(TEST_CLUSTER)
	$(VENV)/bin/nox $(NOXFLAGS)

matrix-corners: $(TEST_CLUSTER)
	$(VENV)/bin/nox -t corners $(NOXFLAGS)

clean: cluster-down
	rm -rf .state
