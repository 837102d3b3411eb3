"""NVIDIA's device plugin and GPU Feature Discovery without the GPU Operator: the
nvidia-device-plugin Helm chart from the pinned k8s-device-plugin module (build.sh)."""
