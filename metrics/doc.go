// Package metrics holds gitsync's own Prometheus metrics: what reconciles,
// applies, prunes, fetches, webhooks and commit-status posts did, the
// current conditions of each GitSync, and the agent's API requests by kind
// (CountAPIRequests).
//
// Contract: a series follows status, not passes. A condition's series is
// replaced (the old one deleted, not set to 0) when its status or reason
// changes, and every series of a GitSync goes with it (Forget), so
// gitsync_condition == 1 is always the current state. A nil *Metrics
// records nothing.
//
// It never decides anything about a GitSync and sends no request: callers
// (package controller, the agent) say what happened; this package counts.
package metrics
