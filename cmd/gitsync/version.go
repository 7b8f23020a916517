package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at build time by `make build` and `make image`:
//
//	-ldflags "-X main.version=0.2.0 -X main.commit=<sha> -X main.date=<RFC 3339>"
//
// A plain `go build` leaves them empty and Go's build info fills in.
var (
	version = ""
	commit  = ""
	date    = ""
)

// newVersionCmd returns `gitsync version`.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the gitsync version, commit and build date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, _ := debug.ReadBuildInfo()
			b := readBuild(version, commit, date, info)
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "gitsync %s\n  commit: %s\n  built:  %s\n  go:     %s %s/%s\n",
				b.version, b.commit, b.date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

// build is what a binary knows about how it was made.
type build struct {
	version string // release version, "(devel)" for an unreleased plain build
	commit  string // VCS revision, "-dirty" appended for uncommitted changes; "unknown" if none
	date    string // build date when stamped, else the commit's time; "unknown" if none
}

// readBuild prefers the linker-set values and falls back, field by field, to
// the module version and VCS settings Go records in every binary built from a
// work tree (go build -buildvcs, the default).
func readBuild(version, commit, date string, info *debug.BuildInfo) build {
	b := build{version: version, commit: commit, date: date}
	if info != nil {
		var rev, at, dirty string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if b.version == "" && info.Main.Version != "" {
			b.version = info.Main.Version
		}
		if b.commit == "" && rev != "" {
			b.commit = rev + dirty
		}
		if b.date == "" {
			b.date = at
		}
	}
	if b.version == "" {
		b.version = "(devel)"
	}
	if b.commit == "" {
		b.commit = "unknown"
	}
	if b.date == "" {
		b.date = "unknown"
	}
	return b
}

// versionString is the version on one line, for logs and the User-Agent.
func versionString() string {
	info, _ := debug.ReadBuildInfo()
	b := readBuild(version, commit, date, info)
	if b.commit == "unknown" {
		return "gitsync " + b.version
	}
	return fmt.Sprintf("gitsync %s (%s)", b.version, b.commit)
}
