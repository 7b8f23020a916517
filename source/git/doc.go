// Package git resolves refs against Git remotes, fetches commits into local
// object stores (one per repository, reused across fetches) and checks them
// out into confined directories for rendering.
//
// It speaks https, ssh, file:// and local paths through go-git, reads
// credentials from a Secret's data (AuthFromSecret), resolves a branch, tag,
// semver range or commit with one listing request, and detects a branch or
// tag that was rewritten since the last fetch.
//
// Contract: credentials never appear in errors (every failure is an *Error
// naming the repository with credentials removed, classified by Reason);
// a deleted ref is ErrRefNotFound, never an empty result; a Source that
// carries an egress dialer (the agent's) reaches its remote only through it
// (egress.go); a checkout never writes outside its directory.
package git
