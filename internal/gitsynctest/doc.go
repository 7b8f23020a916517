// Package gitsynctest holds the one GitSync builder the tests of several
// packages share (New), so a change to the API's required fields or to the
// tests' usual GitSync is made once.
//
// It never starts anything: repositories are internal/gittest's, charts
// internal/testcharts', the control plane internal/testenv's.
package gitsynctest
