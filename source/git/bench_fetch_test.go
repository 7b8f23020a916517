package git

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gitsync.dev/gitsync/internal/gittest"
)

// Benchmarks for the Git source. Run with:
//
//	go test ./source/git -run '^$' -bench 'BenchmarkPoll|BenchmarkFetch' -benchtime 20x
//
// Each reports the loopback HTTP server's view: requests/op and resp-bytes/op
// (response body bytes), next to the same operation by the git CLI.

const (
	benchFiles   = 5000
	benchCommits = 1000
)

// newBenchRepo generates a repository of benchFiles files and benchCommits
// commits with git fast-import (a few seconds), checked out on main.
func newBenchRepo(b *testing.B, root string) *gittest.Repo {
	b.Helper()
	repo := gittest.NewRepo(b, filepath.Join(root, "big"))
	var stream bytes.Buffer
	fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter t <t@example.com> 1700000000 +0000\ndata 4\ninit\n")
	for i := range benchFiles {
		content := benchManifest(i, 0)
		fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n", benchPath(i), len(content), content)
	}
	for c := 1; c < benchCommits; c++ {
		fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter t <t@example.com> %d +0000\ndata 7\nchange\n", 1700000000+c)
		for k := range 3 {
			i := (c*7 + k*1931) % benchFiles
			content := benchManifest(i, c)
			fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n", benchPath(i), len(content), content)
		}
	}
	repo.GitInput(stream.Bytes(), "fast-import", "--quiet")
	repo.Git("reset", "-q", "--hard", "main")
	return repo
}

func benchPath(i int) string {
	return fmt.Sprintf("apps/team%02d/svc%03d/cm%d.yaml", i%20, i/20%250, i)
}

func benchManifest(i, rev int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: team%02d\ndata:\n  revision: \"%d\"\n  payload: %s\n",
		i, i%20, rev, strings.Repeat(fmt.Sprintf("%x", i*2654435761+rev), 4))
}

// pushOne commits a change to one file on the server side.
func pushOne(b *testing.B, repo *gittest.Repo, n int) {
	b.Helper()
	repo.Commit(fmt.Sprintf("bench %d", n), map[string]string{benchPath(n % benchFiles): benchManifest(n%benchFiles, 100000+n)})
}

// gitCLI runs the git CLI against the TLS test server.
func gitCLI(b *testing.B, dir, caFile string, args ...string) {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(gittest.Env(dir), "GIT_SSL_CAINFO="+caFile, "GIT_PROTOCOL=version=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func writeCA(b *testing.B, srv *gitHTTPServer) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "ca.pem")
	if err := os.WriteFile(p, srv.CA, 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

func reportServer(b *testing.B, srv *gitHTTPServer) {
	b.ReportMetric(float64(srv.ListRefs.Load()+srv.UploadPack.Load())/float64(b.N), "requests/op")
	b.ReportMetric(float64(srv.UploadPack.Load())/float64(b.N), "upload-packs/op")
	b.ReportMetric(float64(srv.Bytes.Load())/float64(b.N), "resp-bytes/op")
}

// BenchmarkPollNoChange: one poll of an unchanged remote, i.e. Resolve plus
// Fetch of a commit already present (what the poller and Cache.Get do).
func BenchmarkPollNoChange(b *testing.B) {
	root := b.TempDir()
	newBenchRepo(b, root)
	srv := newGitHTTPServer(b, root, "", "")
	src := Source{URL: srv.URL + "/big", Ref: Ref{Branch: "main"}, Auth: srv.auth()}

	b.Run("gitsync", func(b *testing.B) {
		f := newTestFetcher(b)
		rev, err := f.Resolve(b.Context(), src)
		if err == nil {
			_, err = f.Fetch(b.Context(), src, rev)
		}
		if err != nil {
			b.Fatal(err)
		}
		srv.ResetCounts()
		for b.Loop() {
			rev, err := f.Resolve(b.Context(), src)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Fetch(b.Context(), src, rev); err != nil {
				b.Fatal(err)
			}
		}
		reportServer(b, srv)
	})
	b.Run("git-cli-fetch", func(b *testing.B) {
		ca := writeCA(b, srv)
		clone := b.TempDir()
		gitCLI(b, clone, ca, "clone", "-q", "--depth=1", "--single-branch", "--branch=main", src.URL, ".")
		srv.ResetCounts()
		for b.Loop() {
			gitCLI(b, clone, ca, "fetch", "-q", "--depth=1", "origin", "main")
		}
		reportServer(b, srv)
	})
}

// BenchmarkFetchOneNewCommit: a shallow copy of a repository of 5,000 files
// and 1,000 commits, then one new commit touching one file per iteration.
func BenchmarkFetchOneNewCommit(b *testing.B) {
	root := b.TempDir()
	repo := newBenchRepo(b, root)
	srv := newGitHTTPServer(b, root, "", "")
	src := Source{URL: srv.URL + "/big", Ref: Ref{Branch: "main"}, Auth: srv.auth()}
	n := 0

	b.Run("gitsync", func(b *testing.B) {
		f := newTestFetcher(b)
		rev, err := f.Resolve(b.Context(), src)
		if err == nil {
			_, err = f.Fetch(b.Context(), src, rev)
		}
		if err != nil {
			b.Fatal(err)
		}
		srv.ResetCounts()
		for b.Loop() {
			b.StopTimer()
			n++
			pushOne(b, repo, n)
			b.StartTimer()
			rev, err := f.Resolve(b.Context(), src)
			if err != nil {
				b.Fatal(err)
			}
			rev, err = f.Fetch(b.Context(), src, rev)
			if err != nil {
				b.Fatal(err)
			}
			if rev.Rewritten || rev.Commit != repo.Head() {
				b.Fatalf("fetched %+v, want %s not rewritten", rev, repo.Head())
			}
		}
		reportServer(b, srv)
	})
	b.Run("git-cli-fetch", func(b *testing.B) {
		ca := writeCA(b, srv)
		clone := b.TempDir()
		gitCLI(b, clone, ca, "clone", "-q", "--depth=1", "--single-branch", "--branch=main", src.URL, ".")
		srv.ResetCounts()
		for b.Loop() {
			b.StopTimer()
			n++
			pushOne(b, repo, n)
			b.StartTimer()
			gitCLI(b, clone, ca, "fetch", "-q", "--depth=1", "origin", "main")
		}
		reportServer(b, srv)
	})
}
