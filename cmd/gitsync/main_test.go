package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/internal/testenv"
)

var (
	env *testenv.Env
	// bin is the gitsync binary built once for the package's tests.
	bin string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if onlyDocsTests(flag.Lookup("test.run").Value.String()) {
		os.Exit(m.Run()) // make docs: no control plane, no binary (docsTests)
	}
	dir, err := os.MkdirTemp("", "gitsync-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "gitsync")
	build := exec.Command("go", "build", "-o", bin, ".")
	// Built as make build ships it: without cgo. A cgo binary's render
	// children (glibc's thread stacks and allocator) use address space the
	// shipped one does not, and a kustomize render then sometimes meets the
	// 128 MiB budget.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build gitsync:", err)
		os.Exit(1)
	}
	ctrllog.SetLogger(logr.Discard()) // envtest logs through controller-runtime; the tests read the binary's output
	code := testenv.Main(m, testenv.Options{}, &env)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// result is the outcome of one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout ---\n%s--- stderr ---\n%s", r.code, r.stdout, r.stderr)
}

// gitsync runs the built binary with args and returns its output and exit
// status; it fails the test only if the binary could not be run at all.
func gitsync(t testing.TB, args ...string) result {
	t.Helper()
	return gitsyncEnv(t, nil, args...)
}

// gitsyncEnv is gitsync with extra environment variables ("KEY=value").
func gitsyncEnv(t testing.TB, extraEnv []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent") // only --kubeconfig reaches a cluster
	cmd.Env = append(cmd.Env, extraEnv...)
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run gitsync %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// gitsyncIn runs gitsync against the test control plane in namespace ns.
func gitsyncIn(t testing.TB, ns string, args ...string) result {
	t.Helper()
	return gitsync(t, append(args, "--kubeconfig", env.Kubeconfig, "-n", ns)...)
}

// wantCode fails the test unless r exited with code.
func wantCode(t testing.TB, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit status %d, got:\n%s", code, r)
	}
}

// writeFiles writes files below dir; an empty content removes the file.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fixture copies testdata/<name> into a new directory, replacing __NS__ with
// ns (so cluster-scoped names such as CRD groups are unique per test).
func fixture(t testing.TB, name, ns string) string {
	t.Helper()
	src := filepath.Join("testdata", name)
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFiles(t, dst, map[string]string{e.Name(): strings.ReplaceAll(string(b), "__NS__", ns)})
	}
	return dst
}

// lines returns the lines of s that start with prefix.
func lines(s, prefix string) []string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.HasPrefix(line, prefix) {
			out = append(out, strings.TrimSuffix(line, "\n"))
		}
	}
	return out
}

// changeLines returns the "+ ", "~ " and "- " lines of a diff's output.
func changeLines(s string) []string {
	var out []string
	for _, p := range []string{"+ ", "~ ", "- "} {
		out = append(out, lines(s, p)...)
	}
	return out
}

// git runs the git CLI in dir (internal/gittest's driver) and returns its
// trimmed output.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return gittest.OpenRepo(t, dir).Git(args...)
}

// configMap returns a ConfigMap manifest without a namespace.
func configMap(name, key, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  %s: %q\n", name, key, value)
}
