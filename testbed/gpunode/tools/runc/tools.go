//go:build tools

// Package tools pins runc, whose main package is the module root.
package tools

import _ "github.com/opencontainers/runc"
