# The real GPU node (testbed/gpunode/README.md): a one-node Kubernetes with NVIDIA's toolkit,
# device plugin and GFD, stood up and judged on the lent H200 in one device call.
# Included by the top Makefile, which defines VENV, PY, PYTEST and STATE.
.PHONY: gpunode-bins gpunode-operator-bins gpunode-stage gpunode-stage-operator

TEST_DEPS += gpunode-bins gpunode-operator-bins

# Build the node's binaries (kubelet and the control plane in one binary, containerd, runc, CNI
# plugins, NVIDIA's container toolkit, device plugin and GFD, Node Feature Discovery), or reuse
# them from ${GPUCONFORM_CACHE:-~/.cache/gpuconform}/bin/<versions>/.
gpunode-bins:
	@bash testbed/gpunode/build.sh

# The GPU Operator's operand programs for part 3 (nvidia-validator, the toolkit's installer and
# runtime modes, stand-ins for libnvidia-container's C artifacts); the controller is the cluster bed's.
gpunode-operator-bins:
	@bash testbed/gpunode/build-operator.sh

# Write .gpunode/payload.tar.xz, which the device call carries (carry: [".gpunode/payload.tar.xz"]) and runs with
#   python3 -m testbed.gpunode run --payload .gpunode/payload.tar.xz --out "$OUT"
gpunode-stage: venv gpunode-bins cluster-bins gpu-operator-bins device-plugin-chart
	$(PY) -m testbed.gpunode stage

# Write .gpunode/operator.tar.xz for part 3 (the GPU Operator on the node). It goes in a second
# device call right after the one that carried payload.tar.xz (the warm machine keeps it):
#   carry [".gpunode/operator.tar.xz"]; python3 -m testbed.gpunode run --payload .gpunode/payload.tar.xz \
#     --operator-payload .gpunode/operator.tar.xz --out "$OUT"
gpunode-stage-operator: venv gpunode-operator-bins gpu-operator-bins
	$(PY) -m testbed.gpunode stage --operator
