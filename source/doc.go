// Package source is the source stage of the pipeline: it turns one path of a
// Git repository at a resolved revision into rendered objects, and keeps
// those renders keyed by revision (Cache) so an unchanged path is never
// fetched, checked out or rendered twice.
//
// The concepts live in subpackages; this package only composes them:
//
//   - source/git: remotes (go-git over https, ssh, file:// and local paths),
//     credentials from a Secret, ref resolution (branch, tag, semver range,
//     commit), fetch, checkout, rewrite detection, egress policy, URL
//     redaction and the classification of fetch failures;
//   - source/render: a checkout path into validated objects (plain YAML or
//     kustomize), confined to the checkout, bounded in size, with errors
//     that never quote a Secret;
//   - source/webhook: the one HTTP receiver for every Git host's push
//     webhooks, its replay guard and the Trigger that coalesces wake-ups.
//
// Contract: a rendered result is either complete and validated or an error;
// a failed fetch or render stores nothing, so the last good artifact stays
// in place; a deleted ref is an error, never an empty result.
package source
