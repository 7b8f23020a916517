package controller_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

func labelsOf(ls []*dto.LabelPair) map[string]string {
	out := map[string]string{}
	for _, l := range ls {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// series returns the label sets and values of metric name that belong to
// the GitSync key, without its namespace and name labels.
func (a *agent) series(t *testing.T, name string, key client.ObjectKey) map[string]float64 {
	t.Helper()
	mfs, err := a.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := labelsOf(m.GetLabel())
			if l["namespace"] != key.Namespace || l["name"] != key.Name {
				continue
			}
			var parts []string
			for _, k := range []string{"type", "status", "reason", "revision", "object"} {
				if v, ok := l[k]; ok {
					parts = append(parts, k+"="+v)
				}
			}
			out[strings.Join(parts, ",")] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out
}

// waitSeries waits until metric name's series of key are want (they are set
// right after the status write a test sees) and reports the difference if
// they never are.
func (a *agent) waitSeries(t *testing.T, name string, key client.ObjectKey, want map[string]float64) {
	t.Helper()
	var diff string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		diff = cmp.Diff(want, a.series(t, name, key))
		return diff == "", nil
	})
	if err != nil {
		t.Errorf("%s of %s (-want +got):\n%s", name, key, diff)
	}
}

// TestMetricsFollowConditions: gitsync_condition has one series per
// condition with its current status and reason (the old one removed when
// either changes), gitsync_managed_objects counts the inventory,
// gitsync_suspended follows spec.suspend, and every series of a GitSync goes
// when it is deleted.
//
// Checked: with setStatus not deleting the old label set, the Ready=True
// series stays beside Ready=False and the test fails; with forget not
// called on deletion, the series outlive the GitSync and it fails.
func TestMetricsFollowConditions(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	first := r.commit(map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": configMap("b", "1")})
	gs := newGitSync(ns, "app", r.url())
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, first)
	})
	want := map[string]float64{"type=Ready,status=True,reason=" + v1.ReasonSucceeded: 1}
	a.waitSeries(t, "gitsync_condition", key, want)
	a.waitSeries(t, "gitsync_managed_objects", key, map[string]float64{"": 2})
	a.waitSeries(t, "gitsync_suspended", key, map[string]float64{"": 0})

	r.commit(map[string]string{"deploy/bad.yaml": "kind: [unclosed\n"})
	request(t, c, key, "broken")
	waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue, nil)
	want = map[string]float64{
		"type=Ready,status=False,reason=" + v1.ReasonRenderFailed:  1,
		"type=Stalled,status=True,reason=" + v1.ReasonRenderFailed: 1,
	}
	a.waitSeries(t, "gitsync_condition", key, want)

	patch := client.MergeFrom(gs.DeepCopy())
	gs.Spec.Suspend = true
	if err := c.Patch(context.Background(), gs, patch); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return readyReason(g) == v1.ReasonSuspended
	})
	want = map[string]float64{"type=Ready,status=True,reason=" + v1.ReasonSuspended: 1}
	a.waitSeries(t, "gitsync_condition", key, want)
	a.waitSeries(t, "gitsync_suspended", key, map[string]float64{"": 1})

	if err := c.Delete(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the GitSync gone", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, key, &v1.GitSync{})), nil
	})
	eventually(t, "every series of the GitSync gone", func(context.Context) (bool, error) {
		for _, name := range []string{"gitsync_condition", "gitsync_suspended", "gitsync_managed_objects", "gitsync_last_applied_revision_info"} {
			if len(a.series(t, name, key)) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

// TestWebhookCountsStatusCode: gitsync_webhook_requests_total carries the
// status code the sender was answered: an oversized body is counted as
// too_large with code 413.
func TestWebhookCountsStatusCode(t *testing.T) {
	w := startWebhookAgent(t, env.Namespace(t))
	body := bytes.Repeat([]byte("x"), 2<<20)
	resp, err := http.Post(w.url+"/hook/github", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 2 MiB body was answered %s, want 413", resp.Status)
	}
	mfs, err := w.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "gitsync_webhook_requests_total" {
			for _, m := range mf.GetMetric() {
				l := labelsOf(m.GetLabel())
				got[l["provider"]+","+l["result"]+","+l["code"]] = m.GetCounter().GetValue()
			}
		}
	}
	if diff := cmp.Diff(map[string]float64{"github,too_large,413": 1}, got); diff != "" {
		t.Errorf("gitsync_webhook_requests_total (-want +got):\n%s", diff)
	}
}
