//go:build tools

// Package tools pins the container runtime the end-to-end node runs: containerd,
// its runc shim and ctr, which imports images. build.sh builds each as a binary.
// It is a module of its own so containerd's dependencies do not move the
// Kubernetes versions pinned one folder up.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
