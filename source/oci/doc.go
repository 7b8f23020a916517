// Package oci reads and writes OCI artifacts that hold a directory of
// manifests: the layout `flux push artifact` writes (a Flux config and one
// Flux content layer) and any single-layer artifact or image whose layer is
// a gzip'd tar.
//
// A Repository is an oci:// URL; a Ref selects one artifact of it by tag,
// semver range or digest. Resolve turns a Ref into a Revision (tag and
// manifest digest) with one tag lookup (a HEAD of the manifest) or, for a
// range, one tag listing and one HEAD; it never reads a blob. Pull reads
// the manifest and the layer of one digest and writes the layer's files
// into a directory, verifying every byte against its digest and stopping at
// the Limits, so an artifact is tenant input bounded like a checkout. Push
// packs a directory as a Flux artifact (reproducibly: sorted entries, no
// owners, no times) and uploads it.
//
// Every connection goes through Options.Transport (the egress guard in the
// agent), and plain HTTP is refused unless Options.PlainHTTP: the library
// beneath would otherwise speak HTTP to loopback and private addresses
// without being asked.
package oci
