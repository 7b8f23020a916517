package tenant_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/tenant"
)

// TestRefsOf: every spec field that names a Secret or ConfigMap is in the
// one list, with its field path, in spec order.
func TestRefsOf(t *testing.T) {
	ref := func(name string) v1.LocalObjectReference { return v1.LocalObjectReference{Name: name} }
	gs := &v1.GitSync{Spec: v1.GitSyncSpec{
		Source:         v1.GitSource{SecretRef: &v1.LocalObjectReference{Name: "creds"}, Verify: &v1.GitVerification{SecretRef: ref("keys")}},
		KubeConfig:     &v1.KubeConfigReference{SecretRef: v1.SecretKeyReference{Name: "kc"}},
		Webhook:        &v1.WebhookSpec{SecretRef: ref("hook")},
		CommitStatus:   &v1.CommitStatusSpec{SecretRef: ref("token")},
		Notifications:  []v1.NotificationSpec{{Provider: "slack", SecretRef: ref("slack")}, {Provider: "webhook", SecretRef: ref("hook-key")}},
		SubstituteFrom: []v1.SubstituteReference{{Kind: "ConfigMap", Name: "vars"}},
		Decryption:     &v1.DecryptionSpec{SecretRef: ref("age")},
		Helm: &v1.HelmSpec{Repositories: []v1.HelmRepository{
			{Name: "named"},
			{SecretRef: &v1.LocalObjectReference{Name: "repo"}, Verify: &v1.ChartVerification{SecretRef: ref("chart-keys")}},
		}},
	}}
	want := []tenant.Ref{
		{Kind: "Secret", Name: "creds", Field: "spec.source.secretRef"},
		{Kind: "Secret", Name: "keys", Field: "spec.source.verify.secretRef"},
		{Kind: "Secret", Name: "kc", Field: "spec.kubeConfig.secretRef"},
		{Kind: "Secret", Name: "hook", Field: "spec.webhook.secretRef"},
		{Kind: "Secret", Name: "token", Field: "spec.commitStatus.secretRef"},
		{Kind: "Secret", Name: "slack", Field: "spec.notifications[0].secretRef"},
		{Kind: "Secret", Name: "hook-key", Field: "spec.notifications[1].secretRef"},
		{Kind: "ConfigMap", Name: "vars", Field: "spec.substituteFrom[0]"},
		{Kind: "Secret", Name: "age", Field: "spec.decryption.secretRef"},
		{Kind: "Secret", Name: "repo", Field: "spec.helm.repositories[1].secretRef"},
		{Kind: "Secret", Name: "chart-keys", Field: "spec.helm.repositories[1].verify.secretRef"},
	}
	if diff := cmp.Diff(want, tenant.RefsOf(gs)); diff != "" {
		t.Errorf("RefsOf (-want +got):\n%s", diff)
	}
}
