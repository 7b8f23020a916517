//go:build tools

// Package tools pins kwok, which fakes a Node and its kubelet so Pods become Ready
// in the test control plane. It lives in its own module because kwok pins an older
// Kubernetes client than the control plane in ../go.mod.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
