package metrics

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
)

// Metrics are gitsync's own Prometheus metrics, next to controller-runtime's
// (work queue depth, reconcile totals, REST client requests). A nil
// *Metrics records nothing: every method may be called on it.
type Metrics struct {
	reconcileDuration *prometheus.HistogramVec
	applied           *prometheus.CounterVec
	pruned            prometheus.Counter
	revision          *prometheus.GaugeVec
	webhookRequests   *prometheus.CounterVec
	condition         *prometheus.GaugeVec
	suspended         *prometheus.GaugeVec
	managed           *prometheus.GaugeVec
	fetchDuration     *prometheus.HistogramVec
	fetchErrors       *prometheus.CounterVec

	commitStatusErrors *prometheus.CounterVec
	notificationErrors *prometheus.CounterVec
	drifted            *prometheus.GaugeVec

	// lastRevision and lastConditions remember the label sets per GitSync so
	// an old series is removed when its revision or condition changes, and
	// all of them when the GitSync goes.
	mu             sync.Mutex
	lastRevision   map[types.NamespacedName]string
	lastConditions map[types.NamespacedName]map[string]conditionLabels
	fetchReasons   map[types.NamespacedName]map[string]bool
	lastDrifted    map[types.NamespacedName]map[string]bool
}

// conditionLabels are the status and reason of one condition's series.
type conditionLabels struct{ status, reason string }

// New creates the metrics and registers them with reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gitsync_reconcile_duration_seconds",
			Help:    "Duration of GitSync reconciles by result (" + strings.Join(resultNames(), ", ") + ").",
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
			Help: "Webhook requests by provider, result (accepted, bad_signature, unknown_repository, malformed, replayed, too_large, ignored) and HTTP status code answered. The sender gets the same answer for most; the result is where they differ.",
		}, []string{"provider", "result", "code"}),
		condition: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gitsync_condition",
			Help: "1 for each GitSync condition (Ready, Reconciling, Stalled) with its current status and reason; a series is removed when its status or reason changes.",
		}, []string{"namespace", "name", "type", "status", "reason"}),
		suspended: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gitsync_suspended",
			Help: "1 when the GitSync's spec.suspend is set, else 0.",
		}, []string{"namespace", "name"}),
		managed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gitsync_managed_objects",
			Help: "Objects in the GitSync's inventory.",
		}, []string{"namespace", "name"}),
		fetchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gitsync_fetch_duration_seconds",
			Help:    "Duration of asking a GitSync's remote for the revision of its ref (one ls-remote per poll, webhook or spec change), by result (success, error).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
		}, []string{"result"}),
		fetchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitsync_fetch_errors_total",
			Help: "Failed requests to a GitSync's remote, by the condition reason they are reported under (AuthenticationFailed, HostUnreachable, RefNotFound, FetchFailed, ...).",
		}, []string{"namespace", "name", "reason"}),
		lastRevision:   map[types.NamespacedName]string{},
		lastConditions: map[types.NamespacedName]map[string]conditionLabels{},
		fetchReasons:   map[types.NamespacedName]map[string]bool{},
		lastDrifted:    map[types.NamespacedName]map[string]bool{},
		drifted:        newDrifted(),

		commitStatusErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitsync_commit_status_errors_total",
			Help: "Commit statuses (spec.commitStatus) the Git host did not accept or could not be asked for, by provider. Syncing goes on; the post is tried again at the next reconcile.",
		}, []string{"provider"}),
		notificationErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitsync_notification_errors_total",
			Help: "Notifications (spec.notifications) not sent, by provider: refused, unanswered, or dropped by the destination's rate limit. Syncing goes on; a failed notification is not sent again.",
		}, []string{"provider"}),
	}
	for _, c := range []prometheus.Collector{m.reconcileDuration, m.applied, m.pruned, m.revision, m.webhookRequests,
		m.condition, m.suspended, m.managed, m.fetchDuration, m.fetchErrors, m.commitStatusErrors, m.notificationErrors, m.drifted} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ObserveReconcile records one reconcile that ended with result after d.
func (m *Metrics) ObserveReconcile(result Result, d time.Duration) {
	if m == nil {
		return
	}
	m.reconcileDuration.WithLabelValues(string(result)).Observe(d.Seconds())
}

// ObserveApply counts the objects cs created, configured, skipped or
// failed, by kind.
func (m *Metrics) ObserveApply(cs *apply.ChangeSet) {
	if m == nil || cs == nil {
		return
	}
	for _, e := range cs.Entries {
		switch e.Action {
		case apply.Unchanged, apply.Ignored, apply.Drifted, "": // not written; "": not reached (a held wave, a stopped run)
			continue
		}
		m.applied.WithLabelValues(string(e.Action), e.ID.Kind).Inc()
	}
}

// ObserveWebhook counts one webhook request by provider, result and the
// status code answered.
func (m *Metrics) ObserveWebhook(provider, result string, code int) {
	if m == nil {
		return
	}
	m.webhookRequests.WithLabelValues(provider, result, strconv.Itoa(code)).Inc()
}

// ObserveFetch records one request to key's remote; reason is the
// condition reason of a failure, "" on success.
func (m *Metrics) ObserveFetch(key types.NamespacedName, d time.Duration, reason string) {
	if m == nil {
		return
	}
	if reason == "" {
		m.fetchDuration.WithLabelValues("success").Observe(d.Seconds())
		return
	}
	m.fetchDuration.WithLabelValues("error").Observe(d.Seconds())
	m.fetchErrors.WithLabelValues(key.Namespace, key.Name, reason).Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fetchReasons[key] == nil {
		m.fetchReasons[key] = map[string]bool{}
	}
	m.fetchReasons[key][reason] = true
}

// SetStatus makes gs's condition, suspended and managed-objects series
// match its status and spec, removing the series of conditions that
// changed status or reason or went away.
func (m *Metrics) SetStatus(gs *v1.GitSync) {
	if m == nil {
		return
	}
	key := types.NamespacedName{Namespace: gs.Namespace, Name: gs.Name}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := map[string]conditionLabels{}
	for _, c := range gs.Status.Conditions {
		now[c.Type] = conditionLabels{status: string(c.Status), reason: c.Reason}
	}
	for t, old := range m.lastConditions[key] {
		if now[t] != old {
			m.condition.DeleteLabelValues(key.Namespace, key.Name, t, old.status, old.reason)
		}
	}
	for t, l := range now {
		m.condition.WithLabelValues(key.Namespace, key.Name, t, l.status, l.reason).Set(1)
	}
	m.lastConditions[key] = now
	suspended := 0.0
	if gs.Spec.Suspend {
		suspended = 1
	}
	m.suspended.WithLabelValues(key.Namespace, key.Name).Set(suspended)
	managed := 0
	if gs.Status.Inventory != nil {
		managed = len(gs.Status.Inventory.Entries)
	}
	m.managed.WithLabelValues(key.Namespace, key.Name).Set(float64(managed))
}

// Forget removes every series of key, a GitSync that is gone.
func (m *Metrics) Forget(key types.NamespacedName) {
	if m == nil {
		return
	}
	m.SetRevision(key, "")
	m.mu.Lock()
	defer m.mu.Unlock()
	for t, old := range m.lastConditions[key] {
		m.condition.DeleteLabelValues(key.Namespace, key.Name, t, old.status, old.reason)
	}
	delete(m.lastConditions, key)
	for reason := range m.fetchReasons[key] {
		m.fetchErrors.DeleteLabelValues(key.Namespace, key.Name, reason)
	}
	delete(m.fetchReasons, key)
	m.forgetDrifted(key)
	m.suspended.DeleteLabelValues(key.Namespace, key.Name)
	m.managed.DeleteLabelValues(key.Namespace, key.Name)
}

// ObservePruned counts n objects deleted.
func (m *Metrics) ObservePruned(n int) {
	if m == nil || n == 0 {
		return
	}
	m.pruned.Add(float64(n))
}

// SetRevision records rev as key's last applied revision; "" forgets key.
func (m *Metrics) SetRevision(key types.NamespacedName, rev string) {
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

// ObserveCommitStatusError counts one commit status the provider's host
// did not accept or could not be asked for.
func (m *Metrics) ObserveCommitStatusError(provider string) {
	if m == nil {
		return
	}
	m.commitStatusErrors.WithLabelValues(provider).Inc()
}

// ObserveNotificationError counts one notification the provider's
// destination did not accept, could not be asked for, or that its rate
// limit dropped.
func (m *Metrics) ObserveNotificationError(provider string) {
	if m == nil {
		return
	}
	m.notificationErrors.WithLabelValues(provider).Inc()
}
