//go:build tools

// Package tools pins the JobSet controller (its main package is the module root), which this
// module builds.
package tools

import _ "sigs.k8s.io/jobset"
