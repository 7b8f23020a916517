//go:build tools

// Package tools pins helm, which the chart tests run (helm lint, helm template).
// It lives in its own module so helm's dependency graph never touches the root
// go.mod or the control-plane pins in ../go.mod.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
