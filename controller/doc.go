// Package controller decides, for one GitSync at a time, what the cluster
// should look like and what to say about it: the reconcile and the sync
// (resolve, render, prepare, preflight, engine run), per-key state between
// reconciles, status, conditions and events, the classification of every
// failure into retried or Stalled, the finalizer, dependsOn and waves,
// health judging, access decisions, rewinds, the ranking of a monorepo's
// changed paths, the adapter a Sharder plugs into, and one log line per
// outcome.
//
// Contract: a reconcile reads fresh state whatever woke it, acts only on the
// difference, writes status only when it changed, returns transient errors
// for backoff and reports permanent ones as Stalled without retrying in a
// loop. It does not hold a worker while objects roll out: spec.wait is a
// state that status changes of the objects advance, and a kind that cannot
// be listed, watched or patched stalls the GitSync as Forbidden before
// anything of the revision is applied.
//
// The machinery it decides with lives in packages of its own, each of which
// returns typed errors this package classifies: cluster (target clusters,
// shared clients, tenant kubeconfigs), livecache (the watch cache's options,
// the informers and watches of applied kinds), source/remote (shared
// ls-remotes, the per-host connection limit), commitstatus (the send queue),
// metrics. The agent package builds a GitSyncReconciler with New inside a
// manager whose cache is livecache.Options; this package never builds a
// manager, listens on a port or reads a flag.
package controller
