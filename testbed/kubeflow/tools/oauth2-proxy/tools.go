//go:build tools

// Package tools pins the oauth2-proxy command (its main package is the module root).
package tools

import _ "github.com/oauth2-proxy/oauth2-proxy/v7"
