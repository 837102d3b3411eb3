//go:build tools

// Package tools pins NVIDIA's GPU Operator controller, which this module builds.
package tools

import _ "github.com/NVIDIA/gpu-operator/cmd/gpu-operator"
