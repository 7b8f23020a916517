// Package chartrepo downloads the charts a chart's Chart.yaml depends on
// from Helm repositories (http(s)://, an index.yaml and the archives it
// lists) and OCI registries (oci://, a manifest whose layer is the chart),
// as `helm dependency build` does, and keeps them on disk by digest.
//
// Contract:
//   - It resolves helm.Needs into helm.Archives: a locked dependency at its
//     version, an unlocked one at the highest version its constraint allows
//     (as `helm dependency update`). An archive is checked against the
//     digest its index lists (HTTP) or its manifest names (OCI) before it
//     is kept, and again when it is found in the store.
//   - Every connection dials through the caller's egress.Dialer (the
//     agent's guard: no loopback, link-local or metadata address unless
//     the operator allowed it); no proxy from the environment is used.
//   - Reads are capped: an index at Options.MaxIndexBytes, a chart at
//     Options.MaxChartBytes, counted while read.
//   - Credentials come from the caller's Access, one per repository; they
//     are sent only to the repository's own host (never to a chart URL on
//     another host, as Helm without --pass-credentials) and never appear in
//     an error. A repository that refuses them (401, 403) is an *AuthError.
//   - Indexes are kept in memory for Options.IndexTTL per repository and
//     Access, archives on disk for good, named by digest and shared by
//     every caller: a chart already stored is not downloaded again, but its
//     index (or manifest) is still read with the caller's own credentials,
//     so nobody renders a chart that only someone else may read.
//   - It never unpacks an archive: the render does, in its child, within
//     the render's caps.
package chartrepo
