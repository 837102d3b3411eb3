//go:build tools

// Package tools pins the dex command this module builds.
package tools

import _ "github.com/dexidp/dex/cmd/dex"
