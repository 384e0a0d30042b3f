//go:build tools

// Package tools pins the kcp server binary built by `deno task kcp:build`.
package tools

import _ "github.com/kcp-dev/kcp/cmd/kcp"
