package webhook

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"gitsync.dev/gitsync/source/git"
)

// maxURLsPerEvent bounds how many repository URLs of one payload are looked up.
const maxURLsPerEvent = 16

// Options configures the webhook receiver.
type Options struct {
	// Lookup returns the sources whose repository normalises (NormalizeRepoURL)
	// to repoURL, with their branch and webhook secret. It is called once per
	// distinct URL in a payload and must be cheap (an index, not an API call).
	Lookup func(ctx context.Context, repoURL string) []Target
	// Enqueue is called with the Key of every matching source whose secret
	// verified. It must not block and should drop a key that is already
	// waiting (a workqueue or a Trigger does), so a burst of pushes becomes
	// one fetch.
	Enqueue func(key string)
	// EnqueueAt, when set, is called instead of Enqueue, with the time the
	// delivery was read: every key of one delivery gets the same time, so a
	// consumer can share work asked after it (the agent's one ls-remote per
	// push for all the GitSyncs of a repository).
	EnqueueAt func(key string, at time.Time)
	// MaxBodyBytes caps a request body before it is parsed; larger is 413.
	MaxBodyBytes int64
	// ReplayWindow is how far the generic receiver's X-Timestamp may be from
	// now before the request counts as a replay.
	ReplayWindow time.Duration
	// Clock reads the time for replay checks; a fake clock in tests.
	Clock clock.PassiveClock
	// Observe, when set, is told what became of every delivery to a known
	// path (see Delivery), so the operator sees what the sender is
	// not told: metrics, and events on GitSyncs whose secret did not verify.
	// It must not block.
	Observe func(Delivery)
	// ReplayMemory is how many verified deliveries are remembered, and
	// ReplayTTL for how long, so a delivery sent again (a replay, or a host
	// redelivering) costs no second sync. ReplayTTL must exceed ReplayWindow.
	ReplayMemory int
	ReplayTTL    time.Duration
}

// DefaultOptions returns a 1 MiB body cap, a 5 minute replay window,
// 10,000 deliveries remembered for 10 minutes and the real clock. Lookup and
// Enqueue must be set by the caller.
func DefaultOptions() Options {
	return Options{
		MaxBodyBytes: 1 << 20,
		ReplayWindow: 5 * time.Minute,
		Clock:        clock.RealClock{},
		ReplayMemory: 10_000,
		ReplayTTL:    10 * time.Minute,
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
// Answers: 200 to a ping; 400 to a malformed request or payload; 405 to
// anything but POST; 413 to a body over the cap; and to every well-formed
// push the same 202 with the same body and headers, whether it verified,
// carried a wrong or no signature, named a repository no source follows, or
// repeated a delivery already seen, so a sender learns nothing about which
// repositories the agent serves (the work done is alike too: an unknown
// repository is checked against a throwaway key). What became of it goes to
// Options.Observe instead. It only ever calls Enqueue with a source's
// key, at most once per delivery: a webhook never carries manifests or
// revisions.
type Receiver struct {
	opts      Options
	providers map[string]webhookProvider
	// decoy is a random key an unknown repository's signature is checked
	// against, so that answer takes as long as a wrong signature's.
	decoy []byte
	seen  *replayMemory
}

var _ http.Handler = (*Receiver)(nil)

// NewReceiver validates opts, fills unset caps from DefaultOptions and
// returns the handler.
func NewReceiver(opts Options) (*Receiver, error) {
	if opts.Lookup == nil || opts.Enqueue == nil && opts.EnqueueAt == nil {
		return nil, errors.New("webhook receiver create failed: Lookup and Enqueue are required")
	}
	d := DefaultOptions()
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = d.MaxBodyBytes
	}
	if opts.ReplayWindow <= 0 {
		opts.ReplayWindow = d.ReplayWindow
	}
	if opts.Clock == nil {
		opts.Clock = d.Clock
	}
	if opts.ReplayMemory <= 0 {
		opts.ReplayMemory = d.ReplayMemory
	}
	if opts.ReplayTTL <= 0 {
		opts.ReplayTTL = max(d.ReplayTTL, 2*opts.ReplayWindow)
	}
	decoy := make([]byte, 32)
	if _, err := rand.Read(decoy); err != nil {
		return nil, fmt.Errorf("webhook receiver create failed: %w", err)
	}
	return &Receiver{
		opts:  opts,
		decoy: decoy,
		seen:  newReplayMemory(opts.ReplayMemory, opts.ReplayTTL, opts.Clock),
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
	d := Delivery{Provider: strings.TrimPrefix(req.URL.Path, "/hook/")}
	status := r.handle(w, req, p, &d)
	d.Code = status
	if r.opts.Observe != nil {
		r.opts.Observe(d)
	}
	reply(w, status)
}

// handle decides the answer and records what happened in d.
func (r *Receiver) handle(w http.ResponseWriter, req *http.Request, p webhookProvider, d *Delivery) int {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		d.Result = ResultMalformed
		return http.StatusMethodNotAllowed
	}
	body, status := r.readBody(w, req)
	switch status {
	case 0:
	case http.StatusRequestEntityTooLarge:
		d.Result = ResultTooLarge
		return status
	default:
		d.Result = ResultMalformed
		return status
	}
	switch p.Classify(req.Header) {
	case eventPing:
		d.Result = ResultIgnored
		return http.StatusOK
	case eventOther:
		d.Result = ResultIgnored
		return http.StatusAccepted
	case eventMalformed:
		d.Result = ResultMalformed
		return http.StatusBadRequest
	}
	ev, err := p.Parse(body)
	if err != nil {
		d.Result = ResultMalformed
		return http.StatusBadRequest
	}
	r.dispatch(req.Context(), p, req.Header, body, ev, d)
	return http.StatusAccepted
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
// secret verifies (one check per distinct secret, so a wrong signature
// costs as many HMACs as the repository has secrets, not sources), and,
// unless the delivery was seen before, enqueues those whose branch
// matches. The caller answers 202 whatever it finds.
func (r *Receiver) dispatch(ctx context.Context, p webhookProvider, h http.Header, body []byte, ev pushEvent, d *Delivery) {
	received := r.opts.Clock.Now() // after the push the payload announces
	targets := r.lookup(ctx, ev.RepoURLs)
	if len(targets) == 0 {
		p.Verify(h, body, r.decoy) // as much work as a wrong signature
		d.Result = ResultUnknownRepository
		return
	}
	var verified []Target
	for _, g := range bySecret(targets) {
		if p.Verify(h, body, g.secret) {
			verified = append(verified, g.targets...)
		}
	}
	if len(verified) == 0 {
		d.Result = ResultBadSignature
		for _, t := range targets {
			d.Rejected = append(d.Rejected, t.Key)
		}
		return
	}
	// Scoped to the sources it verified for, never to the endpoint: the same
	// payload sent by two hooks with different secrets is two deliveries,
	// but one delivery posted again to another provider's endpoint (GitHub's
	// body and HMAC presented as Gitea's, which differ only in spelling) is
	// the same delivery.
	var scope string
	for _, t := range verified {
		scope += "\x00" + t.Key
	}
	if !r.seen.firstTime(scope, p.Delivery(h, body)) {
		d.Result = ResultReplayed
		return
	}
	d.Result = ResultAccepted
	for _, t := range verified {
		switch {
		case !branchMatches(t.Branch, ev.Refs):
		case r.opts.EnqueueAt != nil:
			r.opts.EnqueueAt(t.Key, received)
		default:
			r.opts.Enqueue(t.Key)
		}
	}
}

// lookup returns the distinct targets (by Key) with a secret for the
// normalised forms of urls.
func (r *Receiver) lookup(ctx context.Context, urls []string) []Target {
	seenURL := map[string]bool{}
	seenKey := map[string]bool{}
	var out []Target
	for _, u := range urls {
		n := git.NormalizeRepoURL(u)
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

// secretGroup is the targets of one delivery that share a secret.
type secretGroup struct {
	secret  []byte
	targets []Target
}

// bySecret groups targets by secret bytes, in the order each secret first
// appears. The grouping compares our own secrets with each other, never
// with anything from the request, so a map lookup is fine here; the
// request's signature is still compared in constant time by Verify.
func bySecret(targets []Target) []secretGroup {
	var groups []secretGroup
	index := map[string]int{}
	for _, t := range targets {
		i, ok := index[string(t.Secret)]
		if !ok {
			i = len(groups)
			index[string(t.Secret)] = i
			groups = append(groups, secretGroup{secret: t.Secret})
		}
		groups[i].targets = append(groups[i].targets, t)
	}
	return groups
}

// reply writes a status with its standard text and nothing else.
func reply(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, http.StatusText(status)+"\n")
}
