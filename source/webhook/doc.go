// Package webhook receives push webhooks from Git hosts (GitHub, GitLab,
// Bitbucket Cloud and Server, Gitea, and a generic HMAC-signed hook) on one
// HTTP handler, verifies them against the secret of each source that
// follows the repository, and enqueues those sources to be fetched.
//
// Contract: a delivery only ever enqueues keys; it never carries manifests
// or revisions into the sync. Bodies are capped, signatures are compared in
// constant time, a delivery replayed within the replay window is dropped,
// and neither the payload nor any secret appears in a reply or in what is
// reported to Options.Observe.
package webhook
