package shard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

const (
	// leasePrefix starts every member's Lease name.
	leasePrefix = "gitsync-shard-"
)

// Options configures a Member.
type Options struct {
	// Leases reads and writes the Leases. Required.
	Leases coordclient.LeasesGetter
	// Namespace holds the group's Leases. Required.
	Namespace string
	// Group names the replicas that share one set of GitSyncs: the agents
	// of one --shard selector and watch namespace.
	Group string
	// Identity names this replica; a random suffix is added so a restarted
	// process never mistakes its predecessor's Lease for its own.
	Identity string
	// Name, when set, is the Lease name as is, without Identity's random
	// suffix: for tests that need the same assignment at every run. Two
	// live processes must never share it.
	Name string
	// LeaseDuration is how long a Lease counts as live after it was last
	// seen to change. A joining or leaving replica's share moves within it.
	LeaseDuration time.Duration
	// RenewDeadline is how long a replica keeps running its keys without a
	// successful renewal; shorter than LeaseDuration, the difference being
	// the margin for a cancelled reconcile's last request.
	RenewDeadline time.Duration
	// RenewPeriod is how often the Lease is renewed and the group listed.
	RenewPeriod time.Duration
	// Keys returns every key this replica could own (the GitSyncs in its
	// cache). Required.
	Keys func() []string
	// Changed receives the keys this replica may now run or no longer owns,
	// so its user enqueues them. Required.
	Changed func(keys []string)
	// Registerer receives the membership metrics; nil registers none.
	Registerer prometheus.Registerer
	// TracePath, when set, is a file each finished run is appended to as
	// "key identity startUnixNano endUnixNano", for tests that prove no key
	// ran on two replicas at once (GITSYNC_SHARD_TRACE).
	TracePath string
	// Clock is the time source; tests use a fake one.
	Clock Clock
	// Log receives one line per membership change.
	Log logr.Logger
}

// DefaultOptions returns the timings `gitsync run --shards auto` uses, the
// ones client-go's leader election is usually run with.
func DefaultOptions() Options {
	return Options{
		Group:         "gitsync",
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RenewPeriod:   2 * time.Second,
		Clock:         clock.RealClock{},
		Log:           logr.Discard(),
	}
}

// Clock is what a Member needs of time: tickers for renewals and a timer
// that revokes every run at the renewal deadline.
type Clock interface {
	clock.WithTicker
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// Member is one replica's membership in its group: its Lease, its view of
// the group, and the keys it is running.
type Member struct {
	opts  Options
	name  string // this replica's Lease name, its identity in every view
	live  *liveness
	trace *os.File

	// setMu serialises setView: the renewal loop and the deadline timer
	// both install views.
	setMu   sync.Mutex
	running map[string]bool // keys that could run under the last view

	mu       sync.Mutex
	view     *view
	inflight map[string]*run
	drained  chan struct{} // closed and replaced whenever a run ends
	// validUntil is the renewal deadline: the start of the last successful
	// renewal plus RenewDeadline. No run starts after it.
	validUntil time.Time
	// watchdog revokes every run at validUntil; gen tells a stale
	// watchdog (from an earlier renewal) to do nothing.
	watchdog clock.Timer
	gen      uint64

	lease *coordinationv1.Lease // as last written; nil: read it first

	members, owned prometheus.Gauge
}

type run struct {
	cancel context.CancelFunc
	start  time.Time
}

var dnsUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// New validates opts and returns a Member; Start runs it.
func New(opts Options) (*Member, error) {
	def := DefaultOptions()
	if opts.Leases == nil || opts.Namespace == "" || opts.Keys == nil || opts.Changed == nil {
		return nil, errors.New("shard options invalid: Leases, Namespace, Keys and Changed are required")
	}
	if opts.Group == "" {
		opts.Group = def.Group
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = def.LeaseDuration
	}
	if opts.RenewDeadline <= 0 {
		opts.RenewDeadline = def.RenewDeadline
	}
	if opts.RenewPeriod <= 0 {
		opts.RenewPeriod = def.RenewPeriod
	}
	if opts.RenewDeadline >= opts.LeaseDuration || opts.RenewPeriod >= opts.RenewDeadline {
		return nil, fmt.Errorf("shard options invalid: want renew period (%s) < renew deadline (%s) < lease duration (%s)", opts.RenewPeriod, opts.RenewDeadline, opts.LeaseDuration)
	}
	if opts.Clock == nil {
		opts.Clock = def.Clock
	}
	if opts.Log.GetSink() == nil {
		opts.Log = def.Log
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	id := strings.Trim(dnsUnsafe.ReplaceAllString(strings.ToLower(opts.Identity), "-"), "-")
	if len(id) > 40 {
		id = id[:40]
	}
	name := leasePrefix + strings.TrimPrefix(id+"-", "-") + hex.EncodeToString(suffix)
	if opts.Name != "" {
		name = opts.Name
	}
	m := &Member{
		opts:     opts,
		name:     name,
		live:     newLiveness(opts.LeaseDuration),
		inflight: map[string]*run{},
		drained:  make(chan struct{}),
		running:  map[string]bool{},
		members:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "gitsync_shard_members", Help: "Replicas this replica sees in its group (live Leases), itself included."}),
		owned:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "gitsync_shard_owned_gitsyncs", Help: "GitSyncs this replica may reconcile now."}),
	}
	if opts.Registerer != nil {
		if err := errors.Join(opts.Registerer.Register(m.members), opts.Registerer.Register(m.owned)); err != nil {
			return nil, err
		}
	}
	if opts.TracePath != "" {
		f, err := os.OpenFile(opts.TracePath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("shard trace: %w", err)
		}
		m.trace = f
	}
	return m, nil
}

// Name is this replica's identity: the name of its Lease.
func (m *Member) Name() string { return m.name }

// NeedLeaderElection tells controller-runtime to run the Member on every
// replica.
func (m *Member) NeedLeaderElection() bool { return false }

// Owns reports whether this replica owns key in the latest membership it
// saw. It may still have to wait before running it (Acquire).
func (m *Member) Owns(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view.owns(key)
}

// Acquire reports whether this replica may run key now. When it may, the
// returned context is cancelled as soon as it may no longer, and release
// must be called when the run ends; the replica publishes no view that takes
// key away before then.
func (m *Member) Acquire(ctx context.Context, key string) (context.Context, func(), bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.view.mayRun(key) || m.inflight[key] != nil || !m.opts.Clock.Now().Before(m.validUntil) {
		return ctx, func() {}, false
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &run{cancel: cancel, start: m.opts.Clock.Now()}
	m.inflight[key] = r
	return ctx, func() { m.release(key, r) }, true
}

func (m *Member) release(key string, r *run) {
	r.cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inflight[key] != r {
		return
	}
	delete(m.inflight, key)
	close(m.drained)
	m.drained = make(chan struct{})
	if m.trace != nil {
		// One write per line: O_APPEND keeps lines of several processes whole.
		_, _ = fmt.Fprintf(m.trace, "%s %s %d %d\n", key, m.name, r.start.UnixNano(), m.opts.Clock.Now().UnixNano())
	}
}

// setView installs v, cancels the runs it no longer allows, and tells the
// user which keys changed hands since the last view.
func (m *Member) setView(v *view) {
	m.setMu.Lock()
	defer m.setMu.Unlock()
	m.mu.Lock()
	before := m.view
	m.view = v
	for key, r := range m.inflight {
		if !v.mayRun(key) {
			r.cancel()
		}
	}
	m.mu.Unlock()
	if before != nil && before.valid && v.valid && !sameMembers(before.next, v.next) {
		m.opts.Log.Info("shard membership changed", "replica", m.name, "members", len(v.next), "was", len(before.next), "view", formatMembers(v.next))
	}
	m.members.Set(float64(len(v.next)))
	var changed []string
	owned := 0
	running := map[string]bool{}
	for _, key := range m.opts.Keys() {
		may := v.mayRun(key)
		if may {
			owned++
			running[key] = true
		}
		if may != m.running[key] {
			changed = append(changed, key)
		}
	}
	m.running = running
	m.owned.Set(float64(owned))
	if len(changed) > 0 {
		m.opts.Changed(changed)
	}
}

// revoke stops every run: this replica can no longer prove its Lease live.
// gen is the renewal the deadline belongs to; a later renewal voids it.
func (m *Member) revoke(gen uint64) {
	m.mu.Lock()
	if gen != m.gen {
		m.mu.Unlock()
		return
	}
	v := &view{self: m.name}
	if m.view != nil {
		cp := *m.view
		cp.valid = false
		v = &cp
	}
	m.mu.Unlock()
	m.opts.Log.Info("shard lease not renewed in time; stopping every reconcile", "replica", m.name, "renewDeadline", m.opts.RenewDeadline.String())
	m.setView(v)
}

// drainedOf reports whether no run of a key outside next's share is left.
func (m *Member) drainedOf(next []string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.inflight {
		if Owner(next, key) != m.name {
			return false
		}
	}
	return true
}

func (m *Member) leaseFor(view []string, now time.Time) *coordinationv1.Lease {
	t := metav1.NewMicroTime(now)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.name, Namespace: m.opts.Namespace,
			Labels:      map[string]string{v1.LabelShardGroup: m.opts.Group},
			Annotations: map[string]string{v1.AnnotationShardView: formatMembers(view)},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(m.name),
			LeaseDurationSeconds: ptr.To(int32((m.opts.LeaseDuration + time.Second - 1) / time.Second)),
			AcquireTime:          &t,
			RenewTime:            &t,
		},
	}
}
