// Package bench holds gitsync's benchmarks against a real local control plane
// (internal/testenv). They run only with -bench; results and the commands
// that produced them are in RESULTS.md.
package bench
