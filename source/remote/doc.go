// Package remote is the agent's side of talking to Git remotes for many
// GitSyncs at once: one ls-remote shared by every GitSync asking the same
// question at the same moment (Resolver), and a bound on the connections
// open to one host address (LimitHosts).
//
// Contract: sharing never hides news and never crosses credentials. A
// caller names the moment an answer must be asked at or after, so a
// webhook's trigger never gets an answer from before the push; answers are
// keyed by a digest of the URL, the ref, every credential and the Secret
// they came from, so one tenant never gets another's answer (or refusal).
// A flight runs in the agent's context, not a caller's: one caller giving
// up does not fail the others, and the last one leaving cancels it.
//
// It never reads Secrets, never decides whether or when a GitSync asks
// (package controller does), never fetches objects or renders (package
// source does), and holds no credential in memory beyond a flight.
package remote
