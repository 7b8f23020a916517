// Package gittest serves Git repositories over smart HTTP for gitsync's
// tests and its demo: git's own http-backend behind net/http/cgi, on a
// listener of the caller's choosing, with optional TLS, optional basic auth
// whose password can change while it runs, and counts of what clients asked.
package gittest

import (
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Options says how a Server listens and whom it lets in.
type Options struct {
	// Addr is the listen address; "" is a free port on 127.0.0.1.
	Addr string
	// Prefix is the URL path the repositories sit under ("/git"); "" is the
	// root.
	Prefix string
	// TLS serves https with a certificate made for the test (Server.CA).
	TLS bool
	// User and Password, when User is set, are required as basic auth.
	User, Password string
}

// Server serves the repositories under one root directory: the repository
// in ROOT/NAME is at URL + "/" + NAME.
type Server struct {
	// URL is the base URL, with the prefix and without a trailing slash.
	URL string
	// CA is the PEM certificate clients must trust when TLS is on.
	CA []byte

	// ListRefs counts GET …/info/refs (what ls-remote and every fetch
	// start with), UploadPack POST …/git-upload-pack (object transfers),
	// Bytes the response bytes sent.
	ListRefs, UploadPack, Bytes atomic.Int64

	srv  *httptest.Server
	mu   sync.Mutex
	user string
	pass string
}

// Backend is git http-backend for the repositories under root, exported
// read-only.
func Backend(root string) (http.Handler, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("find git: %w", err)
	}
	return &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root},
		// GIT_TRACE_PACKET=<file> in the environment traces the server side.
		InheritEnv: []string{"GIT_TRACE_PACKET"},
	}, nil
}

// Start serves root until Close.
func Start(root string, o Options) (*Server, error) {
	backend, err := Backend(root)
	if err != nil {
		return nil, err
	}
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("Git server: %w", err)
	}
	s := &Server{user: o.User, pass: o.Password}
	mux := http.NewServeMux()
	mux.Handle(o.Prefix+"/", http.StripPrefix(o.Prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.allowed(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/info/refs"):
			s.ListRefs.Add(1)
		case strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
			s.UploadPack.Add(1)
		}
		backend.ServeHTTP(&countingWriter{ResponseWriter: w, n: &s.Bytes}, r)
	})))
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	if o.TLS {
		s.srv.StartTLS()
		s.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	} else {
		s.srv.Start()
	}
	s.URL = s.srv.URL + o.Prefix
	return s, nil
}

// New is Start for a test: it skips when git is not installed and stops
// the server when the test ends.
func New(t testing.TB, root string, o Options) *Server {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	s, err := Start(root, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Close stops the server at once, cutting open connections, as a host
// going down would; repositories are unreachable afterwards.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// SetPassword changes the password basic auth requires from now on.
func (s *Server) SetPassword(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pass = p
}

// ResetCounts sets the request and byte counts back to zero.
func (s *Server) ResetCounts() {
	s.ListRefs.Store(0)
	s.UploadPack.Store(0)
	s.Bytes.Store(0)
}

func (s *Server) allowed(r *http.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.user == "" {
		return true
	}
	u, p, ok := r.BasicAuth()
	return ok && u == s.user && p == s.pass
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

// ServePrivate serves one repository, app.git with one commit on main,
// that a Server lets in only with basic auth git:pass. It returns the
// repository's URL, the server (for its counts) and a function that makes
// another commit (an empty one) and returns its SHA.
func ServePrivate(t testing.TB) (string, *Server, func() string) {
	t.Helper()
	root := t.TempDir()
	r := NewRepo(t, filepath.Join(root, "app.git"))
	commit := func() string { return r.Commit("change", nil) }
	commit()
	s := New(t, root, Options{User: "git", Password: "pass"})
	return s.URL + "/app.git", s, commit
}
