//go:build tools

// Package tools pins the GPU Operator validator for build-operator.sh.
package tools

import (
	_ "github.com/NVIDIA/gpu-operator/validator"
)
