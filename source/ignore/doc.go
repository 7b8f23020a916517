// Package ignore decides which files of a repository a render reads.
//
// Rules come in three layers, evaluated as one .gitignore list in which the
// last matching pattern wins: the defaults (dot files and directories, and a
// short list of CI and tool files that are YAML or JSON but never Kubernetes
// objects), then the .gitsyncignore files of the repository (the root's
// first, each deeper one after its parent's, each scoped to its own
// directory as Git scopes a .gitignore), then the GitSync's spec.ignore
// lines, matched from the repository root. So a repository can re-include a
// default with "!name", and the GitSync's author can override the repository.
//
// The package is pure: it parses rules and answers questions about paths.
// Reading the .gitsyncignore files is the walker's job, which reads a
// directory's file before deciding about its entries, so an ignored file is
// never opened. Rules do not reach inside a kustomization or a Helm chart:
// those read what they name themselves.
package ignore
