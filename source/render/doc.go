// Package render turns one path of a checked-out repository into validated
// Kubernetes objects: a plain YAML/JSON tree, or kustomize when the path
// holds a kustomization, or a Helm chart, then the source's post-render
// changes (package postrender, Settings.PostRender), sorted and
// deduplicated, with a digest over their canonical JSON.
//
// Contract: a result is either complete and validated or an *Error; nothing
// is read from outside the checkout root (paths, symlinks and kustomize
// references are confined; kustomize never reaches the network); the bytes,
// files, objects and YAML alias expansion of one render are bounded
// (Options), and every byte its stages produce is charged to Options.Budget
// as it is produced (package budget); an error about input that may hold a
// Secret names the file, line and generator, never the content
// (render_secret.go).
package render
