//go:build tools

// Package tools pins the device plugin and GPU Feature Discovery commands this module builds.
package tools

import (
	_ "github.com/NVIDIA/k8s-device-plugin/cmd/nvidia-device-plugin"
	_ "github.com/NVIDIA/k8s-device-plugin/cmd/gpu-feature-discovery"
)
