package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"gitsync.dev/gitsync/apply"
)

// newDrifted is gitsync_drifted_object: one series per object a GitSync in
// spec.drift.mode Detect found different from Git and left. The series are
// bounded by the objects a sync manages and go when the drift does.
func newDrifted() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gitsync_drifted_object",
		Help: "1 for each object that differs from Git and was left as it is (spec.drift.mode Detect), by GitSync and object (Kind/namespace/name); the Drifted condition names the fields.",
	}, []string{"namespace", "name", "object"})
}

// SetDrifted makes key's drifted-object series match the Drifted entries
// of cs: an object no longer drifted loses its series. A nil cs (the sync
// stopped before applying) leaves them as they are.
func (m *Metrics) SetDrifted(key types.NamespacedName, cs *apply.ChangeSet) {
	if m == nil || cs == nil {
		return
	}
	now := map[string]bool{}
	for _, e := range cs.Drifted() {
		now[e.Subject] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for s := range m.lastDrifted[key] {
		if !now[s] {
			m.drifted.DeleteLabelValues(key.Namespace, key.Name, s)
		}
	}
	for s := range now {
		m.drifted.WithLabelValues(key.Namespace, key.Name, s).Set(1)
	}
	if len(now) == 0 {
		delete(m.lastDrifted, key)
		return
	}
	m.lastDrifted[key] = now
}

// forgetDrifted removes key's drifted-object series; m.mu is held.
func (m *Metrics) forgetDrifted(key types.NamespacedName) {
	for s := range m.lastDrifted[key] {
		m.drifted.DeleteLabelValues(key.Namespace, key.Name, s)
	}
	delete(m.lastDrifted, key)
}
