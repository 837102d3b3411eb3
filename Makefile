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
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

# Debian packages the simulated platform needs (sshd, busybox for the simulated hosts' userland).
sysdeps:
	@bash testbed/install-sysdeps.sh

include testbed/hosts.mk
-include testbed/cluster.mk

test: deps
	$(PYTEST) -c selftest/pytest.ini selftest $(PYTEST_ARGS)

demo: deps demo-node

clean:
	rm -rf $(VENV) $(STATE) reports/*.html reports/*.json reports/*.xml
