package webui

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	sourcegit "gitsync.dev/gitsync/source/git"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Server serves the pages of one Backend on one loopback listener.
type Server struct {
	backend Backend
	pages   *template.Template
	// token is the secret every action's form carries: another site open
	// in the same browser cannot read a page, so it cannot know it.
	token string
	// port is the listener's; a request naming another is refused.
	port string
	now  func() time.Time
	// mask is applied to every page before it is sent.
	mask func(string) string

	mu sync.Mutex
	// version counts the Backend's changes; changed is closed and
	// replaced at each one, waking every live page.
	version int
	changed chan struct{}
}

// New returns a server of b's pages. Every page is passed through mask
// before it is sent (the process's redactor: a preview renders values
// read from the GitSync's Secrets, which only it knows); nil sends pages as
// they are.
func New(b Backend, mask func(string) string) (*Server, error) {
	if mask == nil {
		mask = func(s string) string { return s }
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(assets, "templates/*.html")
	if err != nil {
		return nil, err
	}
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return nil, err
	}
	return &Server{backend: b, pages: pages, token: base64.RawURLEncoding.EncodeToString(key[:]),
		now: time.Now, mask: mask, changed: make(chan struct{})}, nil
}

// Listen opens addr, which must be a loopback address ("127.0.0.1:0"
// picks a free port): the page acts with the credentials of whoever runs
// it, so it is never offered to another machine.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--address %q: the web view listens on loopback only (127.0.0.1, ::1 or localhost)", addr)
	}
	return net.Listen("tcp", addr)
}

// Serve answers on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		return err
	}
	s.port = port
	go s.follow(ctx)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		_ = srv.Close() // live pages hold their requests open
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// follow turns the Backend's changes into versions the live pages wait on.
func (s *Server) follow(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-s.backend.Changes():
			if !ok {
				return
			}
			s.mu.Lock()
			s.version++
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
		}
	}
}

// current returns the version and the channel closed at the next change.
func (s *Server) current() (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version, s.changed
}

// Handler returns the server's routes behind its guard.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.list)
	mux.HandleFunc("GET /gitsyncs/{namespace}/{name}", s.detail)
	mux.HandleFunc("GET /gitsyncs/{namespace}/{name}/preview", s.preview)
	mux.HandleFunc("POST /gitsyncs/{namespace}/{name}/{action}", s.act)
	mux.HandleFunc("GET /live", s.live)
	return s.guard(mux)
}

// guard refuses a request that names another host than the server's own
// loopback address (a DNS name rebound to 127.0.0.1 would otherwise let a
// web site read the pages), and an action without the page's token or
// from another origin (cross-site request forgery). Every answer forbids
// framing, inline script and caching.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// same-origin, not no-referrer: under no-referrer a browser sends
		// "Origin: null" with a form's POST, and sameOrigin refuses it.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if !s.ownHost(r.Host) {
			http.Error(w, "this server answers only to its own loopback address", http.StatusMisdirectedRequest)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := s.sameOrigin(r); err != nil {
				http.Error(w, err.Error(), http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// ownHost reports whether host (a request's Host header) is this server's
// loopback address: 127.0.0.1, [::1] or localhost at its port.
func (s *Server) ownHost(host string) bool {
	name, port, err := net.SplitHostPort(host)
	if err != nil || port != s.port {
		return false
	}
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin checks an action came from one of the server's own pages.
func (s *Server) sameOrigin(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return errors.New("refused: the request came from another site")
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		return errors.New("refused: the request came from another origin")
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 4<<10)
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("token")), []byte(s.token)) != 1 {
		return errors.New("refused: the form's token is missing or stale; reload the page")
	}
	return nil
}

// page is what every template gets.
type page struct {
	Title string
	// Token goes into every action's form.
	Token string
	// Live is set on pages that follow changes; Version is the Backend's
	// version the page was read at (taken before reading), so a change
	// between the read and the page's stream is not missed.
	Live    bool
	Version int
	// Notice is the outcome of the action just taken, Error a failure.
	Notice, Error string
	Now           time.Time
	Data          any
}

// listData is the list page's.
type listData struct {
	Items  []Summary
	Counts map[State]int
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	p := s.page("GitSyncs", true)
	items, err := s.backend.List(r.Context())
	if err != nil {
		p.Error = err.Error()
	}
	counts := map[State]int{}
	for _, it := range items {
		counts[it.State]++
	}
	p.Data = listData{Items: items, Counts: counts}
	s.render(w, r, "list", p)
}

// notices are what an action reports once done, by the word in ?did=
// (only these words are shown, never text from the address).
var notices = map[string]string{
	"reconcile": "Reconcile requested: the agent syncs this GitSync now.",
	"suspend":   "Suspended: the agent leaves this GitSync alone until it is resumed.",
	"resume":    "Resumed: the agent syncs this GitSync again.",
}

func (s *Server) detail(w http.ResponseWriter, r *http.Request) {
	key := keyOf(r)
	p := s.page(key.Namespace+"/"+key.Name, true)
	d, err := s.backend.Detail(r.Context(), key)
	p.Notice = notices[r.URL.Query().Get("did")]
	if err != nil {
		p.Error = err.Error()
		w.WriteHeader(http.StatusNotFound)
		p.Data = &Detail{Summary: Summary{Namespace: key.Namespace, Name: key.Name, State: StateUnknown}}
	} else {
		p.Data = d
	}
	s.render(w, r, "detail", p)
}

// previewData is the preview page's.
type previewData struct {
	Key    types.NamespacedName
	Branch string
	Diff   string
}

func (s *Server) preview(w http.ResponseWriter, r *http.Request) {
	key := keyOf(r)
	branch := r.URL.Query().Get("branch")
	p := s.page("Preview of "+key.Namespace+"/"+key.Name, false)
	diff, err := s.backend.Preview(r.Context(), key, branch)
	if err != nil {
		p.Error = err.Error()
	}
	p.Data = previewData{Key: key, Branch: branch, Diff: diff}
	s.render(w, r, "preview", p)
}

func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	key := keyOf(r)
	action := r.PathValue("action")
	var err error
	switch action {
	case "reconcile":
		err = s.backend.Reconcile(r.Context(), key)
	case "suspend", "resume":
		err = s.backend.Suspend(r.Context(), key, action == "suspend")
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		p := s.page(key.Namespace+"/"+key.Name, true)
		p.Error = action + " failed: " + err.Error()
		if d, derr := s.backend.Detail(r.Context(), key); derr == nil {
			p.Data = d
		} else {
			p.Data = &Detail{Summary: Summary{Namespace: key.Namespace, Name: key.Name, State: StateUnknown}}
		}
		w.WriteHeader(http.StatusBadGateway)
		s.render(w, r, "detail", p)
		return
	}
	http.Redirect(w, r, detailPath(key)+"?did="+action, http.StatusSeeOther)
}

// live streams a Server-Sent Event at each change, the version as data;
// the page's script then fetches its content again.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	flush, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	v, changed := s.current()
	fmt.Fprintf(w, "retry: 2000\nevent: hello\ndata: %d\n\n", v)
	flush.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-changed:
			v, changed = s.current()
			if _, err := fmt.Fprintf(w, "data: %d\n\n", v); err != nil {
				return
			}
			flush.Flush()
		}
	}
}

// page starts the page title; called before the Backend is read, so its
// Version is never newer than what the page shows.
func (s *Server) page(title string, live bool) *page {
	v, _ := s.current()
	return &page{Title: title, Token: s.token, Live: live, Version: v, Now: s.now()}
}

// render writes the named page, or with ?fragment=1 only its content (what
// a live page swaps in).
func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, p *page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	tmpl := name + ".page"
	if r.URL.Query().Get("fragment") == "1" {
		tmpl = name + ".content"
	}
	var page bytes.Buffer
	if err := s.pages.ExecuteTemplate(&page, tmpl, p); err != nil {
		fmt.Fprintf(&page, "<p class=error>page failed: %s</p>", template.HTMLEscapeString(err.Error()))
	}
	_, _ = io.WriteString(w, s.mask(page.String())) // whole, so a value is never split between writes
}

func keyOf(r *http.Request) types.NamespacedName {
	return types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
}

func detailPath(key types.NamespacedName) string {
	return "/gitsyncs/" + key.Namespace + "/" + key.Name
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"detailPath": detailPath,
	"key":        func(s Summary) types.NamespacedName { return s.Key() },
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return roundAgo(now.Sub(t)) + " ago"
	},
	"rfc3339":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"shortRev": sourcegit.ShortRevision,
	"lower":    func(s State) string { return stateClass[s] },
	"itoa":     strconv.Itoa,
	"id":       func(parts ...string) string { return elementID(parts...) },
	"tree":     treeOf,
}

// stateClass is the CSS class of each state.
var stateClass = map[State]string{StateReady: "ready", StateFailed: "failed", StateProgressing: "progressing",
	StateSuspended: "suspended", StateUnknown: "unknown"}

// roundAgo prints a duration as its largest unit, as kubectl's AGE does.
func roundAgo(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d"
}

// elementID joins parts into an element id (names are DNS labels, which
// an id holds as they are).
func elementID(parts ...string) string {
	return strings.Join(parts, "--")
}

// branch is one namespace of a GitSync's object tree.
type branch struct {
	// Namespace is "" for cluster-scoped objects.
	Namespace string
	Objects   []Object
}

// treeOf groups objects by namespace, cluster-scoped first, each group in
// inventory order.
func treeOf(objs []Object) []branch {
	var out []branch
	at := map[string]int{}
	for _, o := range objs {
		i, ok := at[o.Namespace]
		if !ok {
			i = len(out)
			at[o.Namespace] = i
			out = append(out, branch{Namespace: o.Namespace})
		}
		out[i].Objects = append(out[i].Objects, o)
	}
	slices.SortStableFunc(out, func(a, b branch) int { return strings.Compare(a.Namespace, b.Namespace) })
	return out
}
