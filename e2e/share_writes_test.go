//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestShareWriteProblems: the audit-log check of TestChartOnNode's failover
// passes the history it expects and names each way a history can break the
// sharing rules.
func TestShareWriteProblems(t *testing.T) {
	killed := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "k"}, Status: corev1.PodStatus{PodIP: "10.0.0.1"}}
	survivor := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Status: corev1.PodStatus{PodIP: "10.0.0.2"}}
	owner := map[string]*corev1.Pod{"a": killed, "b": survivor}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	killedAt, expired := t0.Add(10*time.Second), t0.Add(24*time.Second)
	w := func(name, ip string, sec int) write {
		return write{verb: "patch", name: "e2e-" + name, ip: ip, at: t0.Add(time.Duration(sec) * time.Second)}
	}
	good := []write{w("a", killed.Status.PodIP, 1), w("b", survivor.Status.PodIP, 1), w("a", survivor.Status.PodIP, 26)}
	for _, tc := range []struct {
		name   string
		writes []write
		want   string // in the one problem expected; empty: none
	}{
		{"as expected", good, ""},
		{"other objects ignored", append(good, w("config", killed.Status.PodIP, 30)), ""},
		{"written by a non-owner before the kill", append(good, w("a", survivor.Status.PodIP, 5)), "not from its owner"},
		{"killed replica writes after the kill", append(good, w("a", killed.Status.PodIP, 11)), "not from the survivor"},
		{"taken over before the Lease ran out", append(good, w("a", survivor.Status.PodIP, 20)), "before the killed replica's Lease ran out"},
		{"survivor rewrites its own share", append(good, w("b", survivor.Status.PodIP, 30)), "rewrote its own share"},
		{"no takeover", good[:2], "drift repair is missing"},
		{"one replica wrote everything", []write{w("a", killed.Status.PodIP, 1), w("a", survivor.Status.PodIP, 26), w("b", survivor.Status.PodIP, 11)}, "rewrote its own share"},
		{"only one replica before the kill", []write{w("a", killed.Status.PodIP, 1), w("a", survivor.Status.PodIP, 26)}, "no write of ConfigMap e2e-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shareWriteProblems(tc.writes, owner, killed, survivor, killedAt, expired)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("problems %q, want none", got)
			case tc.want != "" && (len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), tc.want)):
				t.Errorf("problems %q, want one saying %q", got, tc.want)
			}
		})
	}
}
