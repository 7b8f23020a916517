package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	out := `goos: linux
BenchmarkAgentScale/concurrent-4-2         	       1	22258719544 ns/op	        42.56 MiB-heap-converged	         0 steady-requests
--- BENCH: BenchmarkAgentScale/concurrent-4-2
    scale_test.go:192: concurrent=4: GitSyncs created in 78ms
BenchmarkCLI/gitsync/diff-2           	       1	1001858159 ns/op	         0.3862 cpu-s	         1.002 s-wall
PASS
`
	want := results{
		"BenchmarkAgentScale/concurrent-4": {"ns/op": 22258719544, "MiB-heap-converged": 42.56, "steady-requests": 0},
		"BenchmarkCLI/gitsync/diff":        {"ns/op": 1001858159, "cpu-s": 0.3862, "s-wall": 1.002},
	}
	if d := cmp.Diff(want, parse(strings.NewReader(out))); d != "" {
		t.Errorf("parse (-want +got):\n%s", d)
	}
}

// TestRewrite: the generated block replaces the previous one and nothing
// else; without markers it goes under the title.
func TestRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "RESULTS.md")
	history := "## Apply engine\n\nhand-written\n"
	if err := os.WriteFile(path, []byte("# Benchmark results\n\n"+history), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, block := range []string{"first\n", "second\n"} {
		if err := rewrite(path, block); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmark results\n\n" + beginMarker + "\nsecond\n" + endMarker + "\n\n" + history
	if d := cmp.Diff(want, string(got)); d != "" {
		t.Errorf("RESULTS.md (-want +got):\n%s", d)
	}
}
