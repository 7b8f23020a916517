// Package controller wires source, diff, apply, inventory and health into a
// level-triggered reconciler for GitSync objects, built on controller-runtime.
//
// Contract: a reconcile reads fresh state whatever woke it, acts only on the
// difference, writes status only when it changed, returns transient errors for
// backoff and reports permanent ones as Stalled without retrying in a loop.
package controller
