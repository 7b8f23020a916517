// Package agent is the gitsync agent as one value: New wires a
// controller-runtime manager (its cache selected and compacted by
// livecache, leader election, metrics and health listeners), the Git
// fetcher and revision cache, the GitSync reconciler, the replicas' sharing
// (internal/shard), and the webhook receiver with its forwarder; Start runs
// them. `gitsync run` and the tests start the agent through New, so they
// start the agent that ships; what a test needs changed (egress dialer,
// registry, listener, concurrency) is a field of Options.
//
// Contract: everything the agent runs is registered with one manager and
// stops with it; nothing reconciles before the manager's caches have
// synced and, with LeaderElection, before this replica leads. The agent's
// own identity is learned once at New (Options, then the chart's
// environment, then a SelfSubjectReview) and only protects its footing
// from prunes.
//
// It decides nothing about a GitSync (package controller does), parses no
// flag (package main does), and reads no Secret itself: the webhook lookup
// reads webhook secrets through the reconciler.
package agent
