package testenv

import (
	"context"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ProtectLabel on a ConfigMap makes DenyProtectedDeletes's policy refuse its
// deletion.
const ProtectLabel = "protect"

// DeletePolicy is an admission policy denying deletes, as a cluster's
// guardrails would.
type DeletePolicy struct {
	env     *Env
	ns      string
	binding *admissionv1.ValidatingAdmissionPolicyBinding
}

// DenyProtectedDeletes installs a ValidatingAdmissionPolicy denying DELETE
// of ConfigMaps labelled ProtectLabel in ns, and waits until it is enforced
// (a dry-run delete of a labelled probe ConfigMap is denied). It is removed
// when the test ends.
func (e *Env) DenyProtectedDeletes(t testing.TB, ns string) *DeletePolicy {
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
				Expression: "!has(oldObject.metadata.labels) || !('" + ProtectLabel + "' in oldObject.metadata.labels)",
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
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Client.Delete(context.Background(), obj) })
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns, Labels: map[string]string{ProtectLabel: "yes"}}}
	if err := e.Client.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	p := &DeletePolicy{env: e, ns: ns, binding: binding}
	p.waitDecision(t, true)
	return p
}

// Lift removes the policy's binding and waits until deletes are allowed.
func (p *DeletePolicy) Lift(t testing.TB) {
	t.Helper()
	if err := p.env.Client.Delete(context.Background(), p.binding); err != nil {
		t.Fatal(err)
	}
	p.waitDecision(t, false)
}

// waitDecision waits until a dry-run delete of the probe is denied (or
// allowed).
func (p *DeletePolicy) waitDecision(t testing.TB, denied bool) {
	t.Helper()
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: "probe"}}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := p.env.Client.Delete(ctx, probe, client.DryRunAll)
		return (err != nil) == denied, nil
	})
	if err != nil {
		t.Fatalf("delete policy never took effect (denied=%v): %v", denied, err)
	}
}
