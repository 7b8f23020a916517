package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestHelp: gitsync --help and each CLI command's help read like kubectl's:
// a one-line summary, examples and flags.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		first string // the summary line
		flags []string
	}{
		{[]string{"--help"}, "gitsync makes a Kubernetes cluster look like a directory of manifests in Git.", nil},
		{[]string{"diff", "--help"}, "Show what applying a directory or repository would change in the cluster.",
			[]string{"--url", "--branch", "--tag", "--semver", "--commit", "--path", "--kubeconfig", "--context", "-n, --namespace", "--name", "-o, --output", "-v, --verbose", "-w, --watch"}},
		{[]string{"apply", "--help"}, "Apply a directory or repository to the cluster with the agent's engine.",
			[]string{"--url", "--kubeconfig", "--name", "--force", "--prune", "--prune-max-share", "--allow-empty", "--wait", "--timeout", "--dry-run"}},
		{[]string{"build", "--help"}, "Print the objects a directory, repository or GitSync renders to, as they",
			[]string{"--url", "--path", "--helm-set", "--substitute", "--age-key-file", "--name", "--gitsync", "-o, --output"}},
		{[]string{"status", "--help"}, "Show the state of GitSync objects: whether they are Ready, the revision last",
			[]string{"-A, --all-namespaces", "-o, --output", "-n, --namespace"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := gitsync(t, tc.args...)
			wantCode(t, r, 0)
			if first, _, _ := strings.Cut(r.stdout, "\n"); first != tc.first {
				t.Errorf("summary line: got %q, want %q", first, tc.first)
			}
			for _, want := range append([]string{"Usage:", "Examples:", "Flags:", "  gitsync "}, tc.flags...) {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("help lacks %q:\n%s", want, r.stdout)
				}
			}
		})
	}
}

func TestReportError(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		wantCode int
		wantOut  string
	}{
		{"nil", nil, 0, ""},
		{"plain error", errors.New("boom"), 1, "error: boom\n"},
		{"differences", &exitErr{Code: 1}, 1, ""},
		{"wrapped with code", fmt.Errorf("diff: %w", withExitCode(2, errors.New("bad"))), 2, "error: diff: bad\n"},
		{"code kept", withExitCode(1, withExitCode(2, errors.New("x"))), 2, "error: x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if got := reportError(&buf, tc.err); got != tc.wantCode {
				t.Errorf("code = %d, want %d", got, tc.wantCode)
			}
			if buf.String() != tc.wantOut {
				t.Errorf("output = %q, want %q", buf.String(), tc.wantOut)
			}
		})
	}
}

// TestNoColourOffTerminal: colours need a terminal, and NO_COLOR wins even there.
func TestNoColourOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := newPrinter(&buf)
	p.Printf("%s\n", p.paint(colourGreen, "+ ConfigMap/ns/a (create)"))
	p.Diff("+added\n-removed\n")
	if strings.Contains(buf.String(), "\x1b[") {
		t.Errorf("escape codes written to a non-terminal: %q", buf.String())
	}
	t.Setenv("TERM", "xterm")
	t.Setenv("NO_COLOR", "")
	if !colorAllowed(true) {
		t.Errorf("a terminal without NO_COLOR should get colours")
	}
	t.Setenv("NO_COLOR", "1")
	if colorAllowed(true) {
		t.Errorf("NO_COLOR set, yet colours are enabled on a terminal")
	}
}
