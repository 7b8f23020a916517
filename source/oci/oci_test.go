package oci_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"gitsync.dev/gitsync/source/oci"
)

// testRegistry is an OCI registry on loopback that counts the requests it
// serves by kind.
type testRegistry struct {
	host string
	mu   sync.Mutex
	seen map[string]int // "HEAD manifest", "GET blob", "GET tags", …
	// tamper, when set, changes blob bodies as they are served.
	tamper func([]byte) []byte
}

func newRegistry(t *testing.T) *testRegistry {
	t.Helper()
	r := &testRegistry{seen: map[string]int{}}
	inner := registry.New(registry.Logger(nilLogger()))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		kind := "other"
		switch {
		case strings.Contains(req.URL.Path, "/manifests/"):
			kind = "manifest"
		case strings.Contains(req.URL.Path, "/blobs/"):
			kind = "blob"
		case strings.HasSuffix(req.URL.Path, "/tags/list"):
			kind = "tags"
		}
		r.mu.Lock()
		r.seen[req.Method+" "+kind]++
		tamper := r.tamper
		r.mu.Unlock()
		if kind == "blob" && req.Method == http.MethodGet && tamper != nil {
			rec := httptest.NewRecorder()
			inner.ServeHTTP(rec, req)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(tamper(rec.Body.Bytes()))
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

func (r *testRegistry) url(repo string) string { return oci.Scheme + r.host + "/" + repo }

func (r *testRegistry) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.seen {
		out[k] = v
	}
	return out
}

func (r *testRegistry) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = map[string]int{}
}

func client() *oci.Client { return oci.New(oci.Options{PlainHTTP: true}) }

// writeTree writes files (slash paths to contents) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readTree reads every regular file under dir.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var manifests = map[string]string{
	"app/deploy.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
	"app/kustomization.yaml":   "resources: [deploy.yaml]\n",
	"base/service.yaml":        "apiVersion: v1\nkind: Service\n",
	".git/config":              "never packed\n",
	"app/nested/deeper/x.yaml": "{}\n",
}

func TestPushResolvePull(t *testing.T) {
	reg := newRegistry(t)
	ctx := context.Background()
	c := client()
	a, err := oci.ParseReference(reg.url("team/app") + ":v1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	dir := writeTree(t, manifests)
	pushed, err := c.Push(ctx, dir, a, oci.PushOptions{Source: "https://git.example/app", Revision: "main@sha1:abc"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Push(ctx, dir, a, oci.PushOptions{Source: "https://git.example/app", Revision: "main@sha1:abc"})
	if err != nil {
		t.Fatal(err)
	}
	if again != pushed {
		t.Errorf("pushing the same files twice gave %s then %s; want one digest", pushed, again)
	}

	if _, err := c.Resolve(ctx, a); err != nil { // sets the connection up
		t.Fatal(err)
	}
	reg.reset()
	rev, err := c.Resolve(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if rev != pushed || rev.String() != "v1.0.0@"+pushed.Digest {
		t.Fatalf("Resolve = %s, want %s", rev, pushed)
	}
	if got := reg.counts(); got["HEAD manifest"] != 1 || len(got) != 1 {
		t.Errorf("resolving a tag sent %v, want one HEAD of its manifest", got)
	}

	dst := filepath.Join(t.TempDir(), "out")
	p, err := c.Pull(ctx, a, rev, dst)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for k, v := range manifests {
		if !strings.HasPrefix(k, ".git/") {
			want[k] = v
		}
	}
	got := readTree(t, dst)
	if len(got) != len(want) {
		t.Errorf("pulled %d files, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if p.Annotations[oci.AnnotationSource] != "https://git.example/app" || p.Annotations[oci.AnnotationRevision] != "main@sha1:abc" {
		t.Errorf("annotations = %v", p.Annotations)
	}
}

func TestResolveSemverListsOnceAndReadsNoBlob(t *testing.T) {
	reg := newRegistry(t)
	ctx := context.Background()
	c := client()
	digests := map[string]string{}
	for i, tag := range []string{"v1.0.0", "v1.2.0", "1.3.0-rc.1", "v2.0.0", "latest"} {
		a, _ := oci.ParseReference(reg.url("app") + ":" + tag)
		rev, err := c.Push(ctx, writeTree(t, map[string]string{"f.yaml": strings.Repeat("x", i+1)}), a, oci.PushOptions{})
		if err != nil {
			t.Fatal(err)
		}
		digests[tag] = rev.Digest
	}
	c = client() // a new client: its first resolve pings the registry once
	reg.reset()
	rev, err := c.Resolve(ctx, oci.Artifact{URL: reg.url("app"), Ref: oci.Ref{Semver: "~1"}})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Tag != "v1.2.0" || rev.Digest != digests["v1.2.0"] {
		t.Errorf("~1 resolved to %s, want v1.2.0@%s", rev, digests["v1.2.0"])
	}
	if got := reg.counts(); got["GET tags"] != 1 || got["HEAD manifest"] != 1 || got["GET other"] != 1 || len(got) != 3 {
		t.Errorf("resolving a range sent %v, want one ping, one tag listing and one HEAD", got)
	}
	if _, err := c.Resolve(ctx, oci.Artifact{URL: reg.url("app"), Ref: oci.Ref{Semver: ">=3"}}); err == nil || !strings.Contains(err.Error(), "no tag satisfies") {
		t.Errorf("a range nothing satisfies: err = %v", err)
	}
	reg.reset()
	d := oci.Artifact{URL: reg.url("app"), Ref: oci.Ref{Digest: digests["latest"]}}
	if rev, err := c.Resolve(ctx, d); err != nil || rev.Digest != digests["latest"] {
		t.Errorf("a digest resolved to %v, %v", rev, err)
	}
	if got := reg.counts(); len(got) != 0 {
		t.Errorf("resolving a digest sent %v, want nothing", got)
	}
}

func TestPlainHTTPRefusedUnlessAllowed(t *testing.T) {
	reg := newRegistry(t)
	a, _ := oci.ParseReference(reg.url("app") + ":v1")
	_, err := oci.New(oci.Options{}).Resolve(context.Background(), a)
	if !errors.Is(err, oci.ErrPlainHTTP) {
		t.Fatalf("resolve over http without PlainHTTP: err = %v, want ErrPlainHTTP", err)
	}
	if got := reg.counts(); len(got) != 0 {
		t.Errorf("the registry was sent %v", got)
	}
}

// pushLayer uploads an artifact whose one layer is blob, of media type mt.
func pushLayer(t *testing.T, reg *testRegistry, repo string, blob []byte, mt types.MediaType) oci.Artifact {
	t.Helper()
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1),
		mutate.Addendum{Layer: static.NewLayer(blob, mt), MediaType: mt})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(reg.host + "/" + repo + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return oci.Artifact{URL: reg.url(repo), Ref: oci.Ref{Digest: d.String()}}
}

type entry struct {
	h    tar.Header
	body string
}

func tarGz(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := e.h
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func file(name, body string) entry { return entry{tar.Header{Name: name, Typeflag: tar.TypeReg}, body} }

func TestPullPlainImageLayer(t *testing.T) {
	reg := newRegistry(t)
	a := pushLayer(t, reg, "plain", tarGz(t, file("./deploy/cm.yaml", "kind: ConfigMap\n")), types.OCILayer)
	dst := filepath.Join(t.TempDir(), "out")
	if _, err := client().Pull(context.Background(), a, oci.Revision{Digest: a.Ref.Digest}, dst); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, dst); got["deploy/cm.yaml"] != "kind: ConfigMap\n" || len(got) != 1 {
		t.Errorf("pulled %v", got)
	}
}

func TestPullRefusesAndLeavesNothing(t *testing.T) {
	zeros := bytes.Repeat([]byte{0}, 8<<20)
	cases := []struct {
		name    string
		blob    func(t *testing.T) []byte
		mt      types.MediaType
		limits  oci.Limits
		tamper  func([]byte) []byte
		want    error
		message string
	}{
		{name: "traversal", blob: func(t *testing.T) []byte { return tarGz(t, file("../escape.yaml", "x")) }, want: oci.ErrLayout, message: "leaves the artifact"},
		{name: "absolute", blob: func(t *testing.T) []byte { return tarGz(t, file("/etc/x.yaml", "x")) }, want: oci.ErrLayout, message: "absolute"},
		{name: "symlink", blob: func(t *testing.T) []byte {
			return tarGz(t, entry{tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}, ""})
		}, want: oci.ErrLayout, message: "is a link"},
		{name: "duplicate", blob: func(t *testing.T) []byte { return tarGz(t, file("a.yaml", "1"), file("./a.yaml", "2")) }, want: oci.ErrLayout, message: "twice"},
		{name: "too many files", blob: func(t *testing.T) []byte { return tarGz(t, file("a", "1"), file("b", "2"), file("c", "3")) },
			limits: oci.Limits{Files: 2}, want: oci.ErrTooLarge, message: "more than 2 entries"},
		{name: "expands too far", blob: func(t *testing.T) []byte { return tarGz(t, file("zeros", string(zeros))) },
			limits: oci.Limits{FileBytes: 1 << 20}, want: oci.ErrTooLarge, message: "more than 1048576 bytes"},
		{name: "layer too large", blob: func(t *testing.T) []byte { return tarGz(t, file("a", strings.Repeat("ab", 4096))) },
			limits: oci.Limits{LayerBytes: 64}, want: oci.ErrTooLarge, message: "more than 64"},
		{name: "not a tar layer", blob: func(t *testing.T) []byte { return []byte("{}") }, mt: "application/json", want: oci.ErrLayout, message: "not a gzip'd tar"},
		{name: "tampered", blob: func(t *testing.T) []byte { return tarGz(t, file("a.yaml", "kind: ConfigMap\n")) },
			tamper: func(b []byte) []byte {
				out, _ := gzipped(tarGzBody(map[string]string{"a.yaml": "kind: Secret\n"}))
				if len(out) > len(b) {
					out = out[:len(b)]
				}
				return append(out, make([]byte, len(b)-len(out))...)
			}, message: "verifying sha256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry(t)
			mt := tc.mt
			if mt == "" {
				mt = oci.FluxContentMediaType
			}
			a := pushLayer(t, reg, "bad", tc.blob(t), mt)
			reg.tamper = tc.tamper
			parent := t.TempDir()
			dst := filepath.Join(parent, "out")
			_, err := oci.New(oci.Options{PlainHTTP: true, Limits: tc.limits}).Pull(context.Background(), a, oci.Revision{Digest: a.Ref.Digest}, dst)
			if err == nil {
				t.Fatal("pulled; want a refusal")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("err = %v, want it to say %q", err, tc.message)
			}
			if left, _ := os.ReadDir(parent); len(left) != 0 {
				t.Errorf("a refused pull left %v beside its destination", left)
			}
		})
	}
}

func TestPullRefusesAnIndex(t *testing.T) {
	reg := newRegistry(t)
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: empty.Image})
	ref, _ := name.ParseReference(reg.host + "/idx:v1")
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	a := oci.Artifact{URL: reg.url("idx"), Ref: oci.Ref{Digest: d.String()}}
	_, err := client().Pull(context.Background(), a, oci.Revision{Digest: d.String()}, filepath.Join(t.TempDir(), "out"))
	if !errors.Is(err, oci.ErrLayout) || !strings.Contains(err.Error(), "is an index") {
		t.Errorf("err = %v, want an index refused", err)
	}
}

func TestParseReference(t *testing.T) {
	for in, want := range map[string]oci.Artifact{
		"oci://ghcr.io/org/app:v1.2.0":                     {URL: "oci://ghcr.io/org/app", Ref: oci.Ref{Tag: "v1.2.0"}},
		"oci://localhost:5000/app":                         {URL: "oci://localhost:5000/app"},
		"oci://localhost:5000/app:latest":                  {URL: "oci://localhost:5000/app", Ref: oci.Ref{Tag: "latest"}},
		"oci://r.io/a/b@sha256:" + strings.Repeat("a", 64): {URL: "oci://r.io/a/b", Ref: oci.Ref{Digest: "sha256:" + strings.Repeat("a", 64)}},
	} {
		got, err := oci.ParseReference(in)
		if err != nil || got != want {
			t.Errorf("ParseReference(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"https://ghcr.io/org/app", "oci://app", "oci://r.io/a@sha256:short", "oci://r.io/A:v1"} {
		if _, err := oci.ParseReference(in); !errors.Is(err, oci.ErrInvalid) {
			t.Errorf("ParseReference(%q): err = %v, want ErrInvalid", in, err)
		}
	}
}

func tarGzBody(files map[string]string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for n, b := range files {
		tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))})
		tw.Write([]byte(b))
	}
	tw.Close()
	return buf.Bytes()
}

func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	err := zw.Close()
	return buf.Bytes(), err
}
