// Package gitsynctest holds the fixtures tests of several packages share:
// the one GitSync builder (New) and the one Helm chart a test repository
// holds (GuestbookChart). Tests that need a fixture of this shape use
// these, so a change to the API or the chart is made once.
//
// It never starts anything: repositories are internal/gittest's, the
// control plane internal/testenv's.
package gitsynctest
