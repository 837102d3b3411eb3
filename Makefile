# gpuconform — the two commands: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PYTEST := $(VENV)/bin/pytest
STATE  := .state

.PHONY: demo test deps venv sysdeps clean

deps: venv sysdeps

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

# Debian packages the simulated platform needs (sshd, busybox for the simulated hosts' userland).
sysdeps:
	@bash testbed/install-sysdeps.sh

include testbed/hosts.mk
include testbed/cluster.mk
include testbed/kubeflow.mk
include testbed/demo-cluster.mk
include testbed/gpunode.mk

test: deps $(TEST_DEPS)
	$(PYTEST) -c selftest/pytest.ini selftest $(PYTEST_ARGS)

# The simulated platform of the demo, all layers in one run and one report:
# - GPU hosts over SSH: three healthy workers and four carrying the article's pitfalls (DKMS
#   stuck at `added` after the linker lost its run bit, bpf_jit_harden=2, signature enforcement
#   refusing the driver);
# - the control plane with the article's three H100 workers, the GPU Operator and MIG;
# - Kubeflow's login path: real dex and oauth2-proxy, the install's objects in the cluster.
# Failing checks are the point of a demo: pytest's exit 1 is not an error here.
DEMO_NODES ?= gpu-good,good-mig,good-debian,dkms-added,ld-not-executable,bpf-jit-harden-2,sig-enforce-blocks-driver

demo: deps $(TEST_DEPS)
	$(PY) -m testbed.kubeflow run --state $(STATE)/demo -- \
	  $(PY) -m testbed.hosts run --names '$(DEMO_NODES)' -- \
	    $(PY) -m pytest -m "node or cluster or kubeflow" --profile={profile} --kubeconfig={kubeconfig} \
	      --report-dir=reports --report-name=demo-$$(date -u +%Y%m%dT%H%M%SZ) $(PYTEST_ARGS) \
	  || [ $$? -eq 1 ]

clean:
	-@[ ! -x $(PY) ] || $(MAKE) --no-print-directory testbed-down hosts-down
	rm -rf $(VENV) $(STATE) reports/*.html reports/*.json reports/*.xml
