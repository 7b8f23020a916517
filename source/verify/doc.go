// Package verify decides whether a Git revision was signed by a trusted
// key: the commit (and/or the annotated tag) carries an OpenPGP signature
// (go-git's payload, checked with github.com/ProtonMail/go-crypto) or an
// SSH signature (PROTOCOL.sshsig, namespace "git", checked with
// github.com/hiddeco/sshsig) by one of the keys of a Secret.
//
// A verdict depends only on the revision's objects and the keys, so it is
// remembered per (repository, commit, tag, mode, digest of the keys'
// bytes): a revision verified once costs a hash of the Secret's data and a
// map lookup afterwards, and a change of the keys verifies again. A
// refusal is an *Error naming the revision, the object and why; it never
// holds key material (a key is named by its fingerprint or the Secret's
// data key and line). A failure to fetch the objects is not a verdict and
// is not remembered.
//
// The package never fetches on its own: the objects come from
// git.Fetcher.Signed, through the caller's egress rules.
package verify
