package shard

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// Start creates this replica's Lease and keeps it renewed until ctx ends;
// then it stops every run, waits for them, and deletes the Lease so the
// others take its share at once.
func (m *Member) Start(ctx context.Context) error {
	defer m.stopWatchdog()
	m.setView(&view{self: m.name})
	var acked []string // what the Lease says; nil until published
	ticker := m.opts.Clock.NewTicker(m.opts.RenewPeriod)
	defer ticker.Stop()
	for {
		acked = m.tick(ctx, acked)
		select {
		case <-ctx.Done():
			return m.leave()
		case <-ticker.C():
		}
	}
}

// tick publishes this replica's view (the next one once the keys it takes
// away have drained), lists the group consistently, and installs the view
// that list allows. It returns the published member list.
func (m *Member) tick(ctx context.Context, acked []string) []string {
	m.mu.Lock()
	cur := m.view
	m.mu.Unlock()
	publish := acked
	if cur != nil && cur.next != nil && m.drainedOf(cur.next) {
		publish = cur.next
	}
	start := m.opts.Clock.Now()
	rctx, cancel := context.WithTimeout(ctx, m.opts.RenewPeriod)
	defer cancel()
	if err := m.renew(rctx, publish, start); err != nil {
		if ctx.Err() == nil {
			m.opts.Log.Error(err, "shard lease renewal failed", "replica", m.name)
		}
		return acked
	}
	acked = publish
	m.resetWatchdog(start)
	list, err := m.opts.Leases.Leases(m.opts.Namespace).List(rctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{v1.LabelShardGroup: m.opts.Group}).String(),
	})
	if err != nil {
		if ctx.Err() == nil {
			m.opts.Log.Error(err, "shard lease list failed", "replica", m.name)
		}
		return acked
	}
	if m.opts.Clock.Since(start) >= m.opts.RenewDeadline {
		return acked // past the deadline: the watchdog revokes
	}
	m.setView(m.viewFrom(list.Items, acked))
	return acked
}

// viewFrom builds the view a consistent list read after publishing acked
// allows. Leases expired for long are deleted (their holders are gone).
func (m *Member) viewFrom(leases []coordinationv1.Lease, acked []string) *view {
	now := m.opts.Clock.Now()
	versions := map[string]string{}
	lists := map[string][]string{}
	for _, l := range leases {
		if l.Name == m.name {
			continue
		}
		versions[l.Name] = l.ResourceVersion
		lists[l.Name] = parseMembers(l.Annotations[v1.AnnotationShardView])
	}
	live := m.live.observe(now, versions)
	v := &view{self: m.name, valid: true, acked: acked, next: normalize(append(live, m.name)), others: map[string][]string{}}
	for _, name := range live {
		v.others[name] = lists[name]
	}
	for _, l := range leases {
		if l.Name != m.name && m.live.expiredFor(now, l.Name) > 4*m.opts.LeaseDuration {
			m.collect(l)
		}
	}
	return v
}

// collect deletes the Lease of a replica gone for long, only if it did not
// change since it was judged expired.
func (m *Member) collect(l coordinationv1.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.RenewPeriod)
	defer cancel()
	err := m.opts.Leases.Leases(l.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion},
	})
	if err == nil {
		m.opts.Log.Info("deleted the Lease of a replica gone for long", "lease", l.Name)
	}
}

// renew writes this replica's Lease with view, creating it the first time
// (or again, if it was collected while this replica could not renew).
// One request per renewal: the Lease as last written is updated in place.
func (m *Member) renew(ctx context.Context, view []string, now time.Time) error {
	leases := m.opts.Leases.Leases(m.opts.Namespace)
	want := m.leaseFor(view, now)
	got := m.lease
	if got == nil {
		var err error
		got, err = leases.Get(ctx, m.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			m.lease, err = leases.Create(ctx, want, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if got.Spec.HolderIdentity == nil || *got.Spec.HolderIdentity != m.name {
			return fmt.Errorf("Lease/%s/%s is held by another replica", m.opts.Namespace, m.name)
		}
	}
	got = got.DeepCopy()
	got.Labels, got.Annotations = want.Labels, want.Annotations
	want.Spec.AcquireTime = got.Spec.AcquireTime
	got.Spec = want.Spec
	updated, err := leases.Update(ctx, got, metav1.UpdateOptions{})
	m.lease = updated
	if err != nil {
		m.lease = nil
	}
	return err
}

// resetWatchdog moves the renewal deadline to RenewDeadline after start, the
// moment the successful renewal was sent, and arms a timer that revokes
// every run then.
func (m *Member) resetWatchdog(start time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	gen := m.gen
	m.validUntil = start.Add(m.opts.RenewDeadline)
	if m.watchdog != nil {
		m.watchdog.Stop()
	}
	m.watchdog = m.opts.Clock.AfterFunc(max(0, m.validUntil.Sub(m.opts.Clock.Now())), func() { m.revoke(gen) })
}

func (m *Member) stopWatchdog() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	if m.watchdog != nil {
		m.watchdog.Stop()
	}
}

// leave stops every run and, once they returned, deletes the Lease. If they
// do not return within RenewDeadline the Lease is left to expire instead.
func (m *Member) leave() error {
	m.mu.Lock()
	v := &view{self: m.name}
	m.mu.Unlock()
	m.setView(v)
	deadline := m.opts.Clock.NewTimer(m.opts.RenewDeadline)
	defer deadline.Stop()
	for {
		m.mu.Lock()
		n, drained := len(m.inflight), m.drained
		m.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-drained:
		case <-deadline.C():
			m.opts.Log.Info("shard: reconciles still running at shutdown; leaving the Lease to expire", "replica", m.name, "running", n)
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.RenewPeriod)
	defer cancel()
	if err := m.opts.Leases.Leases(m.opts.Namespace).Delete(ctx, m.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("Lease/%s/%s delete failed: %w", m.opts.Namespace, m.name, err)
	}
	if m.trace != nil {
		_ = m.trace.Close()
	}
	return nil
}
