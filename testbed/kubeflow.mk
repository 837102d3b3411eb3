# Kubeflow test bed: real dex and oauth2-proxy in front of a stand-in for the Kubeflow web apps,
# with the install's Kubernetes objects in the control-plane test bed (testbed/kubeflow/README.md).
# Included by the top Makefile, which defines PY, STATE and `deps`; cluster-bins is in cluster.mk.
DEMO_KUBEFLOW_STATE ?= $(STATE)/demo-kubeflow

.PHONY: kubeflow-bins demo-kubeflow

TEST_DEPS += kubeflow-bins

# Build dex and oauth2-proxy from the Go module proxy, or reuse them from
# ${GPUCONFORM_CACHE:-~/.cache/gpuconform}/bin/<versions>/.
kubeflow-bins:
	@bash testbed/kubeflow/build.sh

# The kubeflow layer against a fresh bed (stopped afterwards, also on failure or Ctrl-C). The bed
# is production-like: the default password is refused, so every check passes; the report is in
# reports/ with the login evidence (no secrets).
demo-kubeflow: deps cluster-bins gpu-operator-bins kubeflow-bins
	$(PY) -m testbed.kubeflow run --state $(DEMO_KUBEFLOW_STATE) -- \
	  $(PY) -m pytest -m kubeflow --profile={profile} --kubeconfig={kubeconfig} \
	    --report-dir=reports $(PYTEST_ARGS) \
	  || [ $$? -eq 1 ]
