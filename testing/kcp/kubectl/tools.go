//go:build tools

// Package tools pins the kubectl binary built by `deno task kcp:build`.
package tools

import _ "k8s.io/kubernetes/cmd/kubectl"
