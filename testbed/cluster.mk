# Test bed: a real Kubernetes control plane with KWOK GPU workers (testbed/cluster/README.md).
# Included by the top Makefile, which defines VENV, PY, PYTEST and STATE.
CLUSTER_STATE ?= $(STATE)/cluster

.PHONY: cluster-bins kubectl-bin gpu-operator-bins device-plugin-chart trainer-bins testbed-up testbed-down testbed-status

TEST_DEPS += cluster-bins kubectl-bin gpu-operator-bins device-plugin-chart trainer-bins

# Build kube-apiserver/controller-manager/scheduler, etcd and kwok from the Go module proxy,
# or reuse them from ${GPUCONFORM_CACHE:-~/.cache/gpuconform}/bin/<versions>/.
cluster-bins:
	@bash testbed/cluster/build.sh

# kubectl from the same k8s.io/kubernetes release, for the selftest that applies manifests/in-cluster
# with apply -k as a user does; ${GPUCONFORM_CACHE:-~/.cache/gpuconform}/bin/kubectl-<version>/.
kubectl-bin:
	@bash testbed/cluster/build-kubectl.sh

# Build NVIDIA's GPU Operator controller and Helm (testbed/gpuoperator), or reuse them; the
# operator module's chart and assets are kept beside them.
gpu-operator-bins:
	@bash testbed/gpuoperator/build.sh

# NVIDIA's nvidia-device-plugin Helm chart (device plugin + GFD without the GPU Operator) from the
# pinned k8s-device-plugin module (testbed/deviceplugin), for the platform matrix's device-plugin site.
device-plugin-chart:
	@bash testbed/deviceplugin/build.sh

# Kubeflow Trainer v2's controller and the JobSet controller (testbed/trainer), or reuse them; both
# modules' install manifests are kept beside them. The AI Conformance selftests install them on
# the bed (robust_controller).
trainer-bins:
	@bash testbed/trainer/build.sh

testbed-up: venv cluster-bins gpu-operator-bins
	$(PY) -m testbed.cluster up --state $(CLUSTER_STATE)

testbed-down:
	$(PY) -m testbed.cluster down --state $(CLUSTER_STATE)

testbed-status:
	@$(PY) -m testbed.cluster status --state $(CLUSTER_STATE) || true
