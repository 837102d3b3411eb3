# The real GPU node (testbed/gpunode/README.md): a one-node Kubernetes with NVIDIA's toolkit,
# device plugin and GFD, stood up and judged on the lent H200 in one device call.
# Included by the top Makefile, which defines VENV, PY, PYTEST and STATE.
.PHONY: gpunode-bins gpunode-stage

TEST_DEPS += gpunode-bins

# Build the node's binaries (kubelet and the control plane in one binary, containerd, runc, CNI
# plugins, NVIDIA's container toolkit, device plugin and GFD, Node Feature Discovery), or reuse
# them from ${GPUCONFORM_CACHE:-~/.cache/gpuconform}/bin/<versions>/.
gpunode-bins:
	@bash testbed/gpunode/build.sh

# Write .gpunode/payload.tar.xz, which the device call carries (carry: [".gpunode/payload.tar.xz"]) and runs with
#   python3 -m testbed.gpunode run --payload .gpunode/payload.tar.xz --out "$OUT"
gpunode-stage: venv gpunode-bins cluster-bins gpu-operator-bins device-plugin-chart
	$(PY) -m testbed.gpunode stage
