// Package controller wires source, diff, apply, inventory and health into a
// level-triggered reconciler for GitSync objects, built on controller-runtime.
//
// Contract: a reconcile reads fresh state whatever woke it, acts only on the
// difference, writes status only when it changed, returns transient errors for
// backoff and reports permanent ones as Stalled without retrying in a loop.
// It does not hold a worker while objects roll out: spec.wait is a state that status
// changes of the objects advance (health.go), and a kind that cannot be
// listed, watched or patched stalls the GitSync as Forbidden before anything
// of the revision is applied (access.go, informers.go).
//
// The manager's cache is expected to be built with CacheOptions: GitSyncs,
// and of every other kind only objects with the owner label. All GitSyncs
// writing to one cluster share its REST mapper, request budget and (per
// identity) HTTP client.
package controller
