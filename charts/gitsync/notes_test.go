package chart_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestNotes renders NOTES.txt the only way helm does, through install (a
// client-side dry run against testenv), and checks it tells the truth about
// what the agent may do.
func TestNotes(t *testing.T) {
	// helm maps every object to a served kind, GitSyncs too: the CRD first.
	var crds []*unstructured.Unstructured
	for _, o := range template(t, "crd", "default") {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		}
	}
	install(t, crds)

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{
			name: "defaults",
			want: []string{
				"kubectl -n gitsync-system rollout status deployment/gs-gitsync",
				"only what the ServiceAccount named by each GitSync's spec.serviceAccountName",
				"http://gs-gitsync.gitsync-system.svc:9292/hook/",
				"http://gs-gitsync.gitsync-system.svc:8080/metrics",
				"Namespaces where Secrets are read and ServiceAccounts impersonated: gitsync-system\n",
			},
		},
		{
			name: "full values",
			args: []string{"-f", fullValues},
			want: []string{
				"gitsync-system/guestbook\n  tenant-apps/tenant\n",
				"bound to cluster-admin",
				"Namespaces where Secrets are read and ServiceAccounts impersonated: gitsync-system tenant-apps tenant-b\n",
			},
		},
		{
			name: "rules only",
			args: []string{"-f", multiTenantValues},
			want: []string{"the kinds in rbac.rules (ClusterRole gs-gitsync-apply)", "impersonated: gitsync-system team-a\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"install", "gs", ".", "-n", "gitsync-system", "--dry-run=client", "--kubeconfig", env.Kubeconfig,
				// Other tests may have created the same objects without Helm.
				"--take-ownership"}, tc.args...)
			out, err := helm(t, args...)
			if err != nil {
				t.Fatalf("helm install --dry-run: %v\n%s", err, lines(out))
			}
			_, notes, ok := strings.Cut(out, "\nNOTES:\n")
			if !ok {
				t.Fatalf("no NOTES in:\n%s", lines(out))
			}
			for _, w := range tc.want {
				if !strings.Contains(notes, w) {
					t.Errorf("NOTES lack %q:\n%s", w, lines(notes))
				}
			}
		})
	}
}
