package controller_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/inventory"
)

// TestFaultAPIServerRestartMidApply: the apiserver is stopped while the
// apply of a revision is in flight (the proxy holds ConfigMap c's apply
// until the apiserver is down, then forwards it into the void) and started
// again. The agent retries on its own and converges: every object of the
// revision applied and recorded, nothing deleted.
//
// The held rule proves the apply of c was in flight when the apiserver
// died, and the reconcile metric the failed attempt ("retry") it caused.
// No single guard was removed to check it: recovery rests on the
// reconciler's retry, checked by TestFaultConflictOnGitSyncUpdate.
func TestFaultAPIServerRestartMidApply(t *testing.T) {
	f := startFaultCase(t, map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": configMap("b", "1")})
	before := f.uids(t, "a", "b")
	commit2 := f.repo.commit(map[string]string{
		"deploy/a.yaml": configMap("a", "2"),
		"deploy/c.yaml": configMap("c", "1"),
		"deploy/d.yaml": configMap("d", "1"),
	})
	hold := make(chan struct{})
	held := f.proxy.MustInject(t, testenv.Fault{Method: http.MethodPatch, Path: configMapPath(f.ns, "c"), Query: realWrite, Hold: hold, Times: 1})
	retries := f.agent.reconciles(t, "retry")
	request(t, f.c, f.key, "commit2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := held.WaitSeen(ctx); err != nil {
		t.Fatal(err)
	}
	if err := env.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	close(hold)
	if err := env.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitApplied(t, commit2)
	f.assertSurvived(t, before)
	assertNoOrphans(t, f.ns)
	for _, n := range []string{"c", "d"} {
		if _, err := getCM(t, f.c, f.ns, n); err != nil {
			t.Errorf("ConfigMap %s of the revision applied during the outage: %v", n, err)
		}
	}
	if f.agent.reconciles(t, "retry") == retries {
		t.Error("no reconcile failed: the outage did not hit the apply")
	}
}

// TestFaultAdmissionDeniesPrune: a ValidatingAdmissionPolicy denies the
// DELETE of a ConfigMap that left Git. The GitSync says PruneFailed naming
// it, keeps it in its inventory, retries without a new commit, and prunes
// it once the policy is gone.
//
// Checked: with engine.Run recording only the applied inventory after a
// prune (failed entries dropped), the test reports b dropped from the
// inventory, an orphan, and never retried.
func TestFaultAdmissionDeniesPrune(t *testing.T) {
	f := startFaultCase(t, map[string]string{
		"deploy/a.yaml": configMap("a", "1"),
		"deploy/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  labels:\n    protect: \"yes\"\ndata:\n  value: \"1\"\n",
	})
	before := f.uids(t, "a", "b")
	binding := denyProtectedDeletes(t, f.ns)
	commit2 := f.repo.commit(map[string]string{"deploy/b.yaml": ""})
	deletes := f.proxy.MustInject(t, testenv.Fault{Method: http.MethodDelete, Path: configMapPath(f.ns, "b")})
	request(t, f.c, f.key, "commit2")
	gs := f.waitNotReady(t, v1.ReasonPruneFailed, "ConfigMap/"+f.ns+"/b")
	if !recorded(t, gs, inventory.ObjectID{Kind: "ConfigMap", Namespace: f.ns, Name: "b"}) {
		t.Errorf("ConfigMap b dropped from the inventory after its prune was denied: %+v", gs.Status.Inventory)
	}
	f.assertSurvived(t, before)
	assertNoOrphans(t, f.ns)
	eventually(t, "denied prune retried without a new commit", func(context.Context) (bool, error) {
		return deletes.Matched() >= 2, nil
	})

	if err := env.Client.Delete(context.Background(), binding); err != nil {
		t.Fatal(err)
	}
	f.waitApplied(t, commit2)
	eventually(t, "ConfigMap b pruned once allowed", func(context.Context) (bool, error) {
		_, err := getCM(t, f.c, f.ns, "b")
		return apierrors.IsNotFound(err), nil
	})
	f.assertSurvived(t, map[string]types.UID{"a": before["a"]})
	assertNoOrphans(t, f.ns)
}

// recorded reports whether gs's status inventory lists id.
func recorded(t *testing.T, gs *v1.GitSync, id inventory.ObjectID) bool {
	t.Helper()
	if gs.Status.Inventory == nil {
		return false
	}
	return slices.ContainsFunc(gs.Status.Inventory.Entries, func(e v1.InventoryEntry) bool { return e.ID == id.Key() })
}

// denyProtectedDeletes installs a policy denying DELETE of ConfigMaps
// labelled protect in ns, waits until it is enforced (a dry-run delete of a
// probe is denied), and returns its binding.
func denyProtectedDeletes(t *testing.T, ns string) *admissionv1.ValidatingAdmissionPolicyBinding {
	t.Helper()
	ctx := context.Background()
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-delete-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Delete},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "!has(oldObject.metadata.labels) || !('protect' in oldObject.metadata.labels)",
				Message:    "protected ConfigMaps may not be deleted",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
			}},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns, Labels: map[string]string{"protect": "yes"}}}
	if err := env.Client.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return env.Client.Delete(ctx, probe, client.DryRunAll) != nil, nil
	})
	if err != nil {
		t.Fatalf("policy never took effect: %v", err)
	}
	return binding
}
