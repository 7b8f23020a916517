//go:build tools

// Package tools pins cosign, which the tests sign OCI artifacts with (see
// ../build.sh). It lives in its own module so cosign's dependency graph
// (Rekor, Fulcio, TUF, cloud KMS clients) never touches the root go.mod.
package tools

import _ "github.com/sigstore/cosign/v2/cmd/cosign"
