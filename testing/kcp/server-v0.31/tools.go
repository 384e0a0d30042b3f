//go:build tools

// Package tools pins the kcp v0.31.2 binaries built by `deno task kcp:build`: the
// server, and the front-proxy and cache server of a sharded kcp.
package tools

import (
	_ "github.com/kcp-dev/kcp/cmd/cache-server"
	_ "github.com/kcp-dev/kcp/cmd/kcp"
	_ "github.com/kcp-dev/kcp/cmd/kcp-front-proxy"
)
