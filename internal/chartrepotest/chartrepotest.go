// Package chartrepotest serves chart repositories on loopback for tests: a
// Helm HTTP repository (a directory made by the real helm binary's
// `helm package` and `helm repo index`) and an OCI registry
// (go-containerregistry's pkg/registry) that `helm push --plain-http`
// writes to. Both count the requests they answer and may demand basic
// authentication.
package chartrepotest

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"gitsync.dev/gitsync/internal/testenv"
)

// Helm returns the path of the helm binary hack/tools builds, skipping the
// test when it is not built.
func Helm(t testing.TB) string {
	t.Helper()
	dir, err := testenv.BinDir("helm")
	if err != nil {
		t.Skipf("helm is not built: %v", err)
	}
	return filepath.Join(dir, "helm")
}

// HelmEnv is an environment that keeps helm away from the user's
// configuration, caches and repositories: every Helm home is below home.
func HelmEnv(home string) []string {
	return append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"HELM_REPOSITORY_CONFIG="+filepath.Join(home, "config", "repositories.yaml"),
		"HELM_REGISTRY_CONFIG="+filepath.Join(home, "config", "registry", "config.json"))
}

// RunHelm runs helm with args in dir under HelmEnv(home), failing the test
// with its output if it fails.
func RunHelm(t testing.TB, home, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Helm(t), args...)
	cmd.Dir, cmd.Env = dir, HelmEnv(home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// WriteTree writes files (path → content) below dir.
func WriteTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Server is a loopback repository: it counts requests and, while
// credentials are set, refuses requests without them.
type Server struct {
	*httptest.Server
	requests atomic.Int64
	mu       sync.Mutex
	user     string
	password string
	paths    []string
}

// Requests is how many requests the server was sent.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Paths are the paths requested, in order.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

// RequireAuth makes the server refuse (401) any request without the basic
// credentials user:password; empty strings accept everyone again.
func (s *Server) RequireAuth(user, password string) {
	s.mu.Lock()
	s.user, s.password = user, password
	s.mu.Unlock()
}

func (s *Server) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		s.paths = append(s.paths, r.Method+" "+r.URL.Path)
		user, password := s.user, s.password
		s.mu.Unlock()
		if user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// HTTPRepo is a Helm repository served from a directory of packaged charts.
type HTTPRepo struct {
	*Server
	Dir  string
	home string
}

// NewHTTPRepo serves an empty repository; Add packages charts into it.
func NewHTTPRepo(t testing.TB) *HTTPRepo {
	t.Helper()
	r := &HTTPRepo{Server: &Server{}, Dir: t.TempDir(), home: t.TempDir()}
	r.Server.Server = httptest.NewServer(r.wrap(http.FileServer(http.Dir(r.Dir))))
	t.Cleanup(r.Close)
	return r
}

// URL is the repository's URL as Chart.yaml names it.
func (r *HTTPRepo) URL() string { return r.Server.URL + "/charts" }

// Add packages the chart directory chartDir with `helm package` into the
// repository and indexes it again with `helm repo index`.
func (r *HTTPRepo) Add(t testing.TB, chartDir string) {
	t.Helper()
	dest := filepath.Join(r.Dir, "charts")
	if err := os.MkdirAll(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	RunHelm(t, r.home, chartDir, "package", chartDir, "--destination", dest)
	RunHelm(t, r.home, dest, "repo", "index", dest, "--url", r.URL())
}

// AddSigned is Add with the archive signed by `helm package --sign`: a
// provenance file beside it, made with the key name of keyring (a binary
// secret keyring).
func (r *HTTPRepo) AddSigned(t testing.TB, chartDir, keyring, name string) {
	t.Helper()
	dest := filepath.Join(r.Dir, "charts")
	if err := os.MkdirAll(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	RunHelm(t, r.home, chartDir, "package", chartDir, "--destination", dest, "--sign", "--keyring", keyring, "--key", name)
	RunHelm(t, r.home, dest, "repo", "index", dest, "--url", r.URL())
}

// Registry is an OCI registry in memory.
type Registry struct {
	*Server
	home string
}

// NewRegistry serves an empty registry.
func NewRegistry(t testing.TB) *Registry {
	t.Helper()
	g := &Registry{Server: &Server{}, home: t.TempDir()}
	g.Server.Server = httptest.NewServer(g.wrap(registry.New(registry.Logger(log.New(io.Discard, "", 0)))))
	t.Cleanup(g.Close)
	return g
}

// Host is the registry's host:port.
func (g *Registry) Host() string { return strings.TrimPrefix(g.Server.URL, "http://") }

// URL is the registry path charts are pushed to, as Chart.yaml names it.
func (g *Registry) URL() string { return "oci://" + g.Host() + "/charts" }

// Push packages chartDir with `helm package` and pushes it with `helm push
// --plain-http`, and returns the manifest's digest as helm reports it.
func (g *Registry) Push(t testing.TB, chartDir string) string {
	t.Helper()
	dest := t.TempDir()
	RunHelm(t, g.home, chartDir, "package", chartDir, "--destination", dest)
	tgz, err := filepath.Glob(filepath.Join(dest, "*.tgz"))
	if err != nil || len(tgz) != 1 {
		t.Fatalf("helm package wrote %v", tgz)
	}
	out := RunHelm(t, g.home, dest, "push", tgz[0], g.URL(), "--plain-http")
	for _, line := range strings.Split(out, "\n") {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "Digest: "); ok {
			return d
		}
	}
	t.Fatalf("helm push printed no digest:\n%s", out)
	return ""
}

// Leaf is a small chart named name at version, whose ConfigMap says which
// chart and version rendered it.
func Leaf(name, version string) map[string]string {
	return map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n",
		"values.yaml": "greeting: hello\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
  labels:
    chart: {{ .Chart.Name }}-{{ .Chart.Version }}
data:
  greeting: {{ .Values.greeting | quote }}
  alias: {{ .Values.aliasName | default "none" | quote }}
`,
	}
}

// Umbrella is a chart depending on web from the HTTP repository httpURL
// (twice: as itself, and aliased web-canary behind a condition) and on
// cache from the registry ociURL (behind a tag), with a template of its
// own. Its values turn web-canary off and set values of each subchart.
func Umbrella(httpURL, ociURL string) map[string]string {
	return map[string]string{
		"Chart.yaml": `apiVersion: v2
name: platform
version: 0.1.0
dependencies:
- name: web
  version: ~1.2.0
  repository: ` + httpURL + `
- name: web
  alias: web-canary
  version: ~1.2.0
  repository: ` + httpURL + `
  condition: web-canary.enabled
- name: cache
  version: ">=0.4.0 <1.0.0"
  repository: ` + ociURL + `
  tags: [backend]
`,
		"values.yaml": `web:
  greeting: hi from the umbrella
  aliasName: web
web-canary:
  enabled: false
cache:
  greeting: cached
tags:
  backend: true
`,
		"templates/own.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-platform
data:
  deps: {{ range .Chart.Dependencies }}{{ .Name }}-{{ .Version }} {{ end }}
`,
	}
}
