package main

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadBuild(t *testing.T) {
	vcs := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"},
		{Key: "vcs.time", Value: "2026-11-30T12:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		info                  *debug.BuildInfo
		want                  build
	}{
		{
			name:    "stamped by make",
			version: "0.2.0", commit: "def456", date: "2026-11-30T15:00:00Z", info: vcs,
			want: build{version: "0.2.0", commit: "def456", date: "2026-11-30T15:00:00Z"},
		},
		{
			name: "plain go build in a work tree",
			info: vcs,
			want: build{version: "(devel)", commit: "abc123-dirty", date: "2026-11-30T12:00:00Z"},
		},
		{
			name: "go install of a release",
			info: &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}},
			want: build{version: "v0.2.0", commit: "unknown", date: "unknown"},
		},
		{
			name:    "version stamped alone",
			version: "0.2.0", info: vcs,
			want: build{version: "0.2.0", commit: "abc123-dirty", date: "2026-11-30T12:00:00Z"},
		},
		{
			name: "no build info",
			want: build{version: "(devel)", commit: "unknown", date: "unknown"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readBuild(tc.version, tc.commit, tc.date, tc.info)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(build{})); diff != "" {
				t.Errorf("readBuild (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMakeBuild builds the binary the way `make build` does and checks it is
// static (no dynamic loader, no shared library) and prints what was stamped.
func TestMakeBuild(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	static := filepath.Join(t.TempDir(), "gitsync")
	cmd := exec.Command("make", "-s", "-C", "../..", "build", "BIN="+static,
		"VERSION=9.8.7-test", "COMMIT=0123456789abcdef", "BUILD_DATE=2026-01-02T03:04:05Z")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}

	f, err := elf.Open(static)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("binary has a PT_INTERP header: it needs a dynamic loader (libc), so it cannot run on scratch")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("binary needs shared libraries %v (err %v), want none", libs, err)
	}

	out, err := exec.Command(static, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("gitsync version: %v\n%s", err, out)
	}
	for _, want := range []string{"gitsync 9.8.7-test\n", "commit: 0123456789abcdef\n", "built:  2026-01-02T03:04:05Z\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("gitsync version prints\n%s\nwant it to contain %q", out, want)
		}
	}
}
