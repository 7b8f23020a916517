// Package prepare is the one translation of a GitSync's spec into what the
// sync pipeline runs: its render settings and object cap, its own objects
// made from the shared render (variables substituted, then SOPS files
// decrypted, into Secrets only), the redactor that knows every sensitive
// value that entered, and the rails its prunes obey. The agent and
// `gitsync diff --gitsync` both call it, so a preview is the agent's sync.
//
// Contract: pure functions of the spec and of the values handed in; the
// package reads no cluster and no Secret itself (its callers read them,
// the agent through package tenant), never writes to the objects it is
// given (a shared render is copied where it changes), and returns typed
// errors its callers classify: *SpecError for a spec that cannot work as
// written, *MissingError for a named object that does not exist, and the
// substitute and sops packages' errors.
package prepare
