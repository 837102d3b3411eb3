// The module of NVIDIA's k8s-device-plugin, pinned: the bed takes its Helm chart
// (deployments/helm/nvidia-device-plugin) from it; nothing of it is built or committed.
module gpuconform.testbed/deviceplugin-tools

go 1.24

require github.com/NVIDIA/k8s-device-plugin v0.18.0
