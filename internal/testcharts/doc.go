// Package testcharts holds Helm charts written for gitsync's tests that
// reproduce what widely installed charts render and real clusters then do
// to it: podinfo's block scalar that ends its template (no final newline in
// the template's output), Traefik's keys with nothing under them
// (metadata.annotations, resources, env, nodeSelector, … rendered as null).
// They are written from those charts' shapes, not copied from them: no
// third-party chart is vendored. GuestbookChart is the plain chart the
// agent's and the CLI's chart tests share.
//
// Contract: the charts are test data only; nothing outside tests imports
// this package. Files returns a fresh map on every call, so a test may
// change its copy.
package testcharts
