package controller

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"gitsync.dev/gitsync/apply"
)

// Metrics are gitsync's own Prometheus metrics, next to controller-runtime's
// (work queue depth, reconcile totals, REST client requests).
type Metrics struct {
	reconcileDuration *prometheus.HistogramVec
	applied           *prometheus.CounterVec
	pruned            prometheus.Counter
	revision          *prometheus.GaugeVec
	webhookRequests   *prometheus.CounterVec
	// lastRevision remembers the label set per GitSync so the old series is
	// removed when the revision changes.
	mu           sync.Mutex
	lastRevision map[types.NamespacedName]string
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gitsync_reconcile_duration_seconds",
			Help:    "Duration of GitSync reconciles by result (success, stalled, retry, suspended, deleted).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12),
		}, []string{"result"}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitsync_applied_objects_total",
			Help: "Objects handled by apply, by action and kind. Unchanged objects are not counted.",
		}, []string{"action", "kind"}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gitsync_pruned_objects_total",
			Help: "Objects deleted because they left Git or their GitSync was deleted.",
		}),
		revision: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gitsync_last_applied_revision_info",
			Help: "1 for the revision each GitSync last applied.",
		}, []string{"namespace", "name", "revision"}),
		webhookRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitsync_webhook_requests_total",
			Help: "Webhook requests by provider and result (accepted, bad_signature, unknown_repository, malformed, replayed, too_large, ignored). The sender gets the same answer for most; this is where they differ.",
		}, []string{"provider", "result"}),
		lastRevision: map[types.NamespacedName]string{},
	}
	for _, c := range []prometheus.Collector{m.reconcileDuration, m.applied, m.pruned, m.revision, m.webhookRequests} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) observeReconcile(result string, d time.Duration) {
	if m == nil {
		return
	}
	m.reconcileDuration.WithLabelValues(result).Observe(d.Seconds())
}

func (m *Metrics) observeApply(cs *apply.ChangeSet) {
	if m == nil || cs == nil {
		return
	}
	for _, e := range cs.Entries {
		if e.Action != apply.Unchanged {
			m.applied.WithLabelValues(string(e.Action), e.ID.Kind).Inc()
		}
	}
}

func (m *Metrics) observeWebhook(provider, result string) {
	if m == nil {
		return
	}
	m.webhookRequests.WithLabelValues(provider, result).Inc()
}

func (m *Metrics) observePruned(n int) {
	if m == nil || n == 0 {
		return
	}
	m.pruned.Add(float64(n))
}

// setRevision records rev as key's last applied revision; "" forgets key.
func (m *Metrics) setRevision(key types.NamespacedName, rev string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.lastRevision[key]; ok {
		if old == rev {
			return
		}
		m.revision.DeleteLabelValues(key.Namespace, key.Name, old)
	}
	if rev == "" {
		delete(m.lastRevision, key)
		return
	}
	m.lastRevision[key] = rev
	m.revision.WithLabelValues(key.Namespace, key.Name, rev).Set(1)
}
