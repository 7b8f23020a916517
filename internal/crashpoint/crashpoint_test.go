package crashpoint

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want target
	}{
		{"", target{nth: 1}},
		{"after-apply", target{name: "after-apply", nth: 1}},
		{"after-apply@3", target{name: "after-apply", nth: 3}},
		{"after-apply@x", target{name: "after-apply", nth: 1}},
		{"after-apply@0", target{name: "after-apply", nth: 1}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, parse(tc.in), cmp.AllowUnexported(target{})); diff != "" {
				t.Errorf("parse(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestHelperProcess is not a test: the tests below run the test binary
// again with it selected, as a process that may be killed.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("CRASHPOINT_HELPER") != "1" {
		t.Skip("helper process only")
	}
	Hit(BeforeApply)
	Hit(AfterApply)
	Hit(AfterApply)
	os.Exit(0)
}

func runHelper(t *testing.T, at string) (*exec.ExitError, string) {
	t.Helper()
	markerPath := filepath.Join(t.TempDir(), "marker")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "CRASHPOINT_HELPER=1", EnvVar+"="+at, MarkerEnvVar+"="+markerPath)
	err := cmd.Run()
	marker, _ := os.ReadFile(markerPath)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run helper: %v", err)
	}
	return exit, string(marker)
}

func TestHitKillsAtTheNamedPoint(t *testing.T) {
	for _, tc := range []struct {
		at, marker string
		killed     bool
	}{
		{at: "", killed: false},
		{at: "after-prune", killed: false},
		{at: "after-apply", killed: true, marker: "after-apply\n"},
		{at: "after-apply@2", killed: true, marker: "after-apply\n"},
		{at: "after-apply@3", killed: false},
	} {
		t.Run(tc.at, func(t *testing.T) {
			exit, marker := runHelper(t, tc.at)
			killed := exit != nil && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
			if killed != tc.killed {
				t.Fatalf("killed by SIGKILL = %v, want %v (exit: %v)", killed, tc.killed, exit)
			}
			if marker != tc.marker {
				t.Errorf("marker = %q, want %q", marker, tc.marker)
			}
		})
	}
}
