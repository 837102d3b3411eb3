# Simulated GPU hosts reached over real SSH (testbed/hosts/README.md). Included by the Makefile,
# which defines PY, PYTEST and STATE. Needs root (network namespaces, chroot, mknod).
# SCENARIOS=gpu-good,dkms-added limits the nodes (default: every scenario).
SCENARIOS ?=

.PHONY: hosts-up hosts-down hosts-list demo-node

hosts-up: deps
	$(PY) -m testbed.hosts up $(subst $(comma), ,$(SCENARIOS))

hosts-down:
	$(PY) -m testbed.hosts down

hosts-list: venv
	$(PY) -m testbed.hosts list

# The node suite against every simulated host (good and faulty), reports in reports/.
# Failing checks are the point of the demo: pytest's exit 1 (tests failed) is not an error here.
demo-node: deps
	$(PY) -m testbed.hosts run --names '$(SCENARIOS)' -- \
	  $(PY) -m pytest -m node --profile profiles/seed-h100.yaml --report-dir reports $(PYTEST_ARGS) \
	  || [ $$? -eq 1 ]

comma := ,
