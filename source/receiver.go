package source

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"k8s.io/utils/clock"
)

// maxURLsPerEvent bounds how many repository URLs of one payload are looked up.
const maxURLsPerEvent = 16

// ReceiverOptions configures the webhook receiver.
type ReceiverOptions struct {
	// Lookup returns the sources whose repository normalises (NormalizeRepoURL)
	// to repoURL, with their branch and webhook secret. It is called once per
	// distinct URL in a payload and must be cheap (an index, not an API call).
	Lookup func(ctx context.Context, repoURL string) []WebhookTarget
	// Enqueue is called with the Key of every matching source whose secret
	// verified. It must not block and should drop a key that is already
	// waiting (a workqueue or a Trigger does), so a burst of pushes becomes
	// one fetch.
	Enqueue func(key string)
	// MaxBodyBytes caps a request body before it is parsed; larger is 413.
	MaxBodyBytes int64
	// ReplayWindow is how far the generic receiver's X-Timestamp may be from
	// now before the request counts as a replay.
	ReplayWindow time.Duration
	// Clock reads the time for replay checks; a fake clock in tests.
	Clock clock.PassiveClock
}

// DefaultReceiverOptions returns a 1 MiB body cap, a 5 minute replay window
// and the real clock. Lookup and Enqueue must be set by the caller.
func DefaultReceiverOptions() ReceiverOptions {
	return ReceiverOptions{
		MaxBodyBytes: 1 << 20,
		ReplayWindow: 5 * time.Minute,
		Clock:        clock.RealClock{},
	}
}

// Receiver is the one HTTP handler for every Git host's webhooks:
//
//	POST /hook/github            X-GitHub-Event, X-Hub-Signature-256
//	POST /hook/gitlab            X-Gitlab-Event, X-Gitlab-Token
//	POST /hook/bitbucket         X-Event-Key, X-Hub-Signature (Bitbucket Cloud)
//	POST /hook/bitbucket-server  X-Event-Key, X-Hub-Signature (Server / Data Center)
//	POST /hook/gitea             X-Gitea-Event, X-Gitea-Signature
//	POST /hook/generic           X-Timestamp, X-Signature over "<timestamp>.<body>"
//
// Answers: 200 to a ping; 202 to a verified push (whether or not a branch
// matched), to an event it ignores and to a repository it does not know, with
// no detail; 400 to a malformed payload; 401 to a missing or wrong signature;
// 405 to anything but POST; 413 to a body over the cap. It only ever calls
// Enqueue with a source's key: a webhook never carries manifests or revisions.
type Receiver struct {
	opts      ReceiverOptions
	providers map[string]webhookProvider
}

var _ http.Handler = (*Receiver)(nil)

// NewReceiver validates opts, fills unset caps from DefaultReceiverOptions and
// returns the handler.
func NewReceiver(opts ReceiverOptions) (*Receiver, error) {
	if opts.Lookup == nil || opts.Enqueue == nil {
		return nil, errors.New("webhook receiver create failed: Lookup and Enqueue are required")
	}
	d := DefaultReceiverOptions()
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = d.MaxBodyBytes
	}
	if opts.ReplayWindow <= 0 {
		opts.ReplayWindow = d.ReplayWindow
	}
	if opts.Clock == nil {
		opts.Clock = d.Clock
	}
	return &Receiver{
		opts: opts,
		providers: map[string]webhookProvider{
			"/hook/github":           githubProvider{},
			"/hook/gitlab":           gitlabProvider{},
			"/hook/bitbucket":        bitbucketCloudProvider{},
			"/hook/bitbucket-server": bitbucketServerProvider{},
			"/hook/gitea":            giteaProvider{},
			"/hook/generic":          genericProvider{clock: opts.Clock, window: opts.ReplayWindow},
		},
	}, nil
}

// NewServer returns an HTTP server for the receiver with the timeouts an
// Internet-facing listener needs, so a slow client cannot hold connections.
func NewServer(addr string, handler http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// ServeHTTP handles one webhook delivery.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	p, ok := r.providers[req.URL.Path]
	if !ok {
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed)
		return
	}
	body, status := r.readBody(w, req)
	if status != 0 {
		reply(w, status)
		return
	}
	switch p.Classify(req.Header) {
	case eventPing:
		reply(w, http.StatusOK)
		return
	case eventOther:
		reply(w, http.StatusAccepted)
		return
	case eventMalformed:
		reply(w, http.StatusBadRequest)
		return
	}
	if !p.Signed(req.Header) {
		reply(w, http.StatusUnauthorized)
		return
	}
	ev, err := p.Parse(body)
	if err != nil {
		reply(w, http.StatusBadRequest)
		return
	}
	reply(w, r.dispatch(req.Context(), p, req.Header, body, ev))
}

// readBody reads at most MaxBodyBytes, refusing a larger body before any of
// it is parsed. It returns a non-zero status on failure.
func (r *Receiver) readBody(w http.ResponseWriter, req *http.Request) ([]byte, int) {
	if req.ContentLength > r.opts.MaxBodyBytes {
		return nil, http.StatusRequestEntityTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, r.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, http.StatusRequestEntityTooLarge
		}
		return nil, http.StatusBadRequest
	}
	return body, 0
}

// dispatch finds the sources of the event's repository, keeps those whose
// secret verifies, and enqueues those whose branch matches.
func (r *Receiver) dispatch(ctx context.Context, p webhookProvider, h http.Header, body []byte, ev pushEvent) int {
	targets := r.lookup(ctx, ev.RepoURLs)
	if len(targets) == 0 {
		return http.StatusAccepted // unknown repository: say nothing more
	}
	verified := false
	for _, t := range targets {
		if !p.Verify(h, body, t.Secret) {
			continue
		}
		verified = true
		if branchMatches(t.Branch, ev.Refs) {
			r.opts.Enqueue(t.Key)
		}
	}
	if !verified {
		return http.StatusUnauthorized
	}
	return http.StatusAccepted
}

// lookup returns the distinct targets (by Key) with a secret for the
// normalised forms of urls.
func (r *Receiver) lookup(ctx context.Context, urls []string) []WebhookTarget {
	seenURL := map[string]bool{}
	seenKey := map[string]bool{}
	var out []WebhookTarget
	for _, u := range urls {
		n := NormalizeRepoURL(u)
		if n == "" || seenURL[n] {
			continue
		}
		if len(seenURL) == maxURLsPerEvent {
			break
		}
		seenURL[n] = true
		for _, t := range r.opts.Lookup(ctx, n) {
			if len(t.Secret) == 0 || seenKey[t.Key] {
				continue
			}
			seenKey[t.Key] = true
			out = append(out, t)
		}
	}
	return out
}

// reply writes a status with its standard text and nothing else.
func reply(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, http.StatusText(status)+"\n")
}
