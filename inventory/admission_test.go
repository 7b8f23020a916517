package inventory

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAdmissionDeniedDeletionStaysAndIsRetried: a ValidatingAdmissionPolicy
// that denies the DELETE fails the prune; the object stays in Remaining and
// is pruned by the retry once the policy is gone.
func TestAdmissionDeniedDeletionStaysAndIsRetried(t *testing.T) {
	ns := env.Namespace(t)
	c := watchClient(t)
	anchor := ours(t, ns, "anchor")
	labels := OwnerLabels(owner, ns)
	labels["protect"] = "yes"
	protected := createCM(t, ns, "protected", labels, nil)
	binding := denyProtectedDeletes(t, ns)
	opts := testOptions(t, ns)
	desired := New(anchor)

	res, err := prune(t, c, New(anchor, protected), desired, opts)
	if err == nil || actions(res)[protected.ID.String()] != ActionFailed || !exists(t, protected) {
		t.Fatalf("denied prune: error %v, action %q, exists %v; want an error, failed, present",
			err, actions(res)[protected.ID.String()], exists(t, protected))
	}
	if diff := cmp.Diff([]Entry{anchor, protected}, res.Remaining.Entries); diff != "" {
		t.Errorf("Remaining (-want +got):\n%s", diff)
	}

	if err := env.Client.Delete(context.Background(), binding); err != nil {
		t.Fatal(err)
	}
	waitForDeleteDecision(t, ns, false)
	res, err = prune(t, c, res.Remaining, desired, opts)
	if err != nil {
		t.Fatalf("retry Execute: %v", err)
	}
	if got := actions(res)[protected.ID.String()]; got != ActionPruned || exists(t, protected) {
		t.Errorf("retry: action %q, exists %v; want pruned and gone", got, exists(t, protected))
	}
}

// denyProtectedDeletes installs a policy denying DELETE of ConfigMaps
// labelled protect in ns, waits until it is enforced, and returns its
// binding.
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
	createCM(t, ns, "probe", map[string]string{"protect": "yes"}, nil)
	waitForDeleteDecision(t, ns, true)
	return binding
}

// waitForDeleteDecision waits until a dry-run delete of the probe is denied
// (or allowed): policies take effect asynchronously.
func waitForDeleteDecision(t *testing.T, ns string, denied bool) {
	t.Helper()
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := env.Client.Delete(ctx, probe, client.DryRunAll)
		return (err != nil) == denied, nil
	})
	if err != nil {
		t.Fatalf("policy never took effect (denied=%v): %v", denied, err)
	}
}
