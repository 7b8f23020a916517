package controller_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/metrics"
	"gitsync.dev/gitsync/object"
)

// TestFaultDiscoveryFailsForOneGroup: a Widget (a custom resource) is in
// the inventory and leaves Git while discovery of its group answers 503 to
// a freshly started agent. Unknown is not absent: the Widget is neither
// deleted nor dropped from the inventory, the GitSync is not Ready and
// names it; once discovery answers again it is pruned.
//
// Checked: with prune planning taking a kind it cannot resolve as absent
// (inventory's inspect returning ActionAbsent instead of ActionFailed), the
// Widget is pruned at once and the test fails waiting for Ready=False. The
// proxy forces per-group discovery, else one aggregated /apis answers for
// every group and the rule is never asked.
func TestFaultDiscoveryFailsForOneGroup(t *testing.T) {
	group := rand.String(6) + ".example.com"
	createWidgetCRD(t, group)
	widget := "apiVersion: " + group + "/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\n"
	f := startFaultCase(t, map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/w.yaml": widget})
	before := f.uids(t, "a")
	w := &unstructured.Unstructured{}
	w.SetAPIVersion(group + "/v1")
	w.SetKind("Widget")
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "w"}, w); err != nil {
		t.Fatal(err)
	}
	// A new agent has no discovery cached: it must ask, and is refused.
	f.agent.stop()
	f.proxy.LegacyDiscovery()
	failing := f.proxy.MustInject(t, testenv.Fault{Method: http.MethodGet, Path: "^/apis/" + group + "(/v1)?$", Status: http.StatusServiceUnavailable})
	f.agent = startAgent(t, agentOptions{namespace: f.ns, config: f.proxy.Config})
	commit2 := f.repo.commit(map[string]string{"deploy/w.yaml": ""})
	request(t, f.c, f.key, "commit2")
	gs := waitCondition(t, f.c, f.key, v1.ConditionReady, metav1.ConditionFalse, func(g *v1.GitSync) bool {
		return failing.Matched() > 0 && strings.Contains(g.Status.LastAttemptedRevision, commit2)
	})
	wid := object.ID{Group: group, Kind: "Widget", Namespace: f.ns, Name: "w"}
	if !recorded(t, gs, wid) {
		t.Errorf("Widget dropped from the inventory while its group's discovery failed: %+v", gs.Status.Inventory)
	}
	if msg := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady).Message; !strings.Contains(msg, "Widget") {
		t.Errorf("Ready message %q does not name the Widget whose kind is unknown", msg)
	}
	got := w.DeepCopy()
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil || got.GetUID() != w.GetUID() {
		t.Errorf("Widget deleted while its kind was unknown: %v", err)
	}
	assertNoOrphans(t, f.ns)

	failing.Clear()
	f.waitApplied(t, commit2)
	eventually(t, "Widget pruned once its kind is known again", func(ctx context.Context) (bool, error) {
		err := f.c.Get(ctx, client.ObjectKeyFromObject(w), w.DeepCopy())
		return apierrors.IsNotFound(err), nil
	})
	f.assertSurvived(t, before)
	assertNoOrphans(t, f.ns)
}

// TestFaultTwoLeaders: two agents without leader election reconcile the
// same GitSync at once, as two replicas do for a moment after a lease
// expired by force. Applies are idempotent (objects unchanged in Git are
// never modified again, none is created twice) and deletes are
// preconditioned on the recorded UID: each object that left Git is
// deleted exactly once, and nothing else is.
//
// Both agents' reconcile metrics must move (both really worked). Not
// checked by removing a guard: a non-idempotent apply would show as extra
// Modified events, a double delete as a second Deleted event.
func TestFaultTwoLeaders(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	files := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		files["deploy/"+n+".yaml"] = configMap(n, "1")
	}
	events := recordConfigMapEvents(t, ns)
	first, second := startAgent(t, agentOptions{namespace: ns}), startAgent(t, agentOptions{namespace: ns})
	f := &faultCase{c: c, ns: ns, repo: newRepo(t), agent: first}
	f.first = f.repo.commit(files)
	gs := newGitSync(ns, "app", f.repo.url())
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	f.key = client.ObjectKeyFromObject(gs)
	f.waitApplied(t, f.first)
	before := f.uids(t, "a", "b", "c", "d")

	commit2 := f.repo.commit(map[string]string{"deploy/a.yaml": configMap("a", "2"), "deploy/e.yaml": "", "deploy/f.yaml": ""})
	ran1, ran2 := first.reconcilesAll(t), second.reconcilesAll(t)
	request(t, c, f.key, "commit2")
	f.waitApplied(t, commit2)
	for _, n := range []string{"e", "f"} {
		eventually(t, "ConfigMap "+n+" pruned", func(context.Context) (bool, error) {
			_, err := getCM(t, c, ns, n)
			return apierrors.IsNotFound(err), nil
		})
	}
	// Both agents reconcile the request; wait until both are done so
	// their late writes, if any, are in the record.
	eventually(t, "both agents reconciled the new commit", func(context.Context) (bool, error) {
		return first.reconcilesAll(t) > ran1 && second.reconcilesAll(t) > ran2, nil
	})
	f.assertSurvived(t, before)
	assertNoOrphans(t, ns)
	got := events.counts()
	want := map[string]map[watch.EventType]int{
		"a": {watch.Added: 1, watch.Modified: 1},
		"b": {watch.Added: 1}, "c": {watch.Added: 1}, "d": {watch.Added: 1},
		"e": {watch.Added: 1, watch.Deleted: 1}, "f": {watch.Added: 1, watch.Deleted: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConfigMap events: each created once, changed once if Git changed it, deleted once if it left Git (-want +got):\n%s", diff)
	}
}

// TestFaultUpgradeFromPreviousStatusFormat: an agent upgrade finds an
// inventory written by the previous version ({id, v, uid} entries, nothing
// else). The new agent reads it as applied objects: objects still in Git
// keep their UIDs (no mass prune) and the one that left Git is pruned.
//
// Checked: with previous-format entries ignored (inventoryOf returning an
// empty inventory unless some entry is pending), c is never pruned and the
// test fails; the UID assertions and the DELETE count catch a mass prune.
func TestFaultUpgradeFromPreviousStatusFormat(t *testing.T) {
	f := startFaultCase(t, map[string]string{
		"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": configMap("b", "1"), "deploy/c.yaml": configMap("c", "1"),
	})
	before := f.uids(t, "a", "b", "c")
	f.agent.stop()

	// The previous format, written as JSON so no field of today's survives.
	type oldEntry struct {
		ID      string    `json:"id"`
		Version string    `json:"v"`
		UID     types.UID `json:"uid"`
	}
	var old []oldEntry
	for _, n := range []string{"a", "b", "c"} {
		id := object.ID{Kind: "ConfigMap", Namespace: f.ns, Name: n}
		old = append(old, oldEntry{ID: id.Key(), Version: "v1", UID: before[n]})
	}
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/status/inventory", "value": map[string]any{"entries": old}}})
	if err != nil {
		t.Fatal(err)
	}
	gs := &v1.GitSync{}
	if err := f.c.Get(context.Background(), f.key, gs); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Status().Patch(context.Background(), gs, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		t.Fatalf("write previous status format: %v", err)
	}

	deletes := f.proxy.MustInject(t, testenv.Fault{Method: http.MethodDelete, Path: "^/api/v1/namespaces/" + f.ns + "/configmaps/", Query: realWrite})
	f.agent = startAgent(t, agentOptions{namespace: f.ns, config: f.proxy.Config})
	commit2 := f.repo.commit(map[string]string{"deploy/c.yaml": ""})
	request(t, f.c, f.key, "commit2")
	f.waitApplied(t, commit2)
	eventually(t, "ConfigMap c (left Git) pruned", func(context.Context) (bool, error) {
		_, err := getCM(t, f.c, f.ns, "c")
		return apierrors.IsNotFound(err), nil
	})
	f.assertSurvived(t, map[string]types.UID{"a": before["a"], "b": before["b"]})
	assertNoOrphans(t, f.ns)
	if n := deletes.Matched(); n != 1 {
		t.Errorf("%d ConfigMap DELETE requests after the upgrade, want 1 (c)", n)
	}
}

// reconcilesAll returns how many reconciles ended, whatever their result.
func (a *agent) reconcilesAll(t *testing.T) uint64 {
	t.Helper()
	var n uint64
	for _, r := range []metrics.Result{metrics.Success, metrics.Retry, metrics.Stalled, metrics.Suspended, metrics.Deleted} {
		n += a.reconciles(t, r)
	}
	return n
}

// configMapEvents records the watch events of ConfigMaps in a namespace.
type configMapEvents struct {
	mu   sync.Mutex
	seen map[string]map[watch.EventType]int
}

func (e *configMapEvents) counts() map[string]map[watch.EventType]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]map[watch.EventType]int{}
	for n, m := range e.seen {
		out[n] = map[watch.EventType]int{}
		for k, v := range m {
			out[n][k] = v
		}
	}
	return out
}

// recordConfigMapEvents watches ConfigMaps in ns until the test ends
// (kube-root-ca.crt excluded).
func recordConfigMapEvents(t *testing.T, ns string) *configMapEvents {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &unstructuredConfigMapList, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	e := &configMapEvents{seen: map[string]map[watch.EventType]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(client.Object)
			if !ok || obj.GetName() == "kube-root-ca.crt" {
				continue
			}
			e.mu.Lock()
			if e.seen[obj.GetName()] == nil {
				e.seen[obj.GetName()] = map[watch.EventType]int{}
			}
			e.seen[obj.GetName()][ev.Type]++
			e.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); cancel(); <-done })
	return e
}

var unstructuredConfigMapList = func() unstructured.UnstructuredList {
	l := unstructured.UnstructuredList{}
	l.SetAPIVersion("v1")
	l.SetKind("ConfigMapList")
	return l
}()

// createWidgetCRD creates a namespaced Widget kind in group and waits until
// it is served.
func createWidgetCRD(t *testing.T, group string) {
	t.Helper()
	createCRD(t, setup(t), testCRD(group, "Widget"))
}
