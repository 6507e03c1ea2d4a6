//go:build tools

// Package tools pins alp so `go mod tidy` keeps it in go.sum; the bench
// builds the upstream command straight from the module cache.
package tools

import _ "github.com/tkuchiki/alp/cmd/alp"
