// Package source turns a Git repository path at a resolved revision into
// Kubernetes objects.
//
// It owns fetching (go-git over https, ssh, file:// and local paths), ref
// resolution (branch, tag, semver range, commit), a revision-versioned cache,
// the poller, webhook receivers and rendering (plain YAML or kustomize).
//
// Contract: a rendered result is either complete and validated or an error;
// nothing is ever rendered from outside the repository root; a deleted ref is
// an error, never an empty result; credentials never appear in errors, and
// neither do Secret values (render_secret.go: a render error about input that
// may hold a Secret names the file, line and generator, never the content).
// Webhook receivers only enqueue sources to be fetched, they never carry
// manifests.
package source
