# The cluster layer against the simulated platform (testbed/cluster/README.md): start a fresh
# control plane with the article's GPU workers, run `pytest -m cluster` writing the report in
# reports/, and stop the control plane again, also when the run fails or is interrupted.
# Included by the Makefile, which defines PY, STATE and `deps`; cluster-bins is in cluster.mk.
DEMO_CLUSTER_STATE ?= $(STATE)/demo-cluster

.PHONY: demo-cluster

demo-cluster: deps cluster-bins gpu-operator-bins
	$(PY) -m testbed.cluster up --state $(DEMO_CLUSTER_STATE)
	trap '$(PY) -m testbed.cluster down --state $(DEMO_CLUSTER_STATE)' EXIT; \
	  $(PY) -m pytest -m cluster --profile=profiles/seed-h100.yaml \
	    --kubeconfig=$(DEMO_CLUSTER_STATE)/admin.kubeconfig --report-dir=reports $(PYTEST_ARGS) \
	  || [ $$? -eq 1 ]
