//go:build tools

// Package tools pins Kubeflow Trainer v2's controller manager, which this module builds.
package tools

import _ "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"
