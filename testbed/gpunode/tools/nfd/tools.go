//go:build tools

// Package tools pins the Node Feature Discovery commands this module builds.
package tools

import (
	_ "sigs.k8s.io/node-feature-discovery/cmd/nfd-master"
	_ "sigs.k8s.io/node-feature-discovery/cmd/nfd-worker"
)
