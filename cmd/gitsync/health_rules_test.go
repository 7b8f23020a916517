package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

// widgetCRD is a namespaced Widget kind in group, keeping any fields.
func widgetCRD(group string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.%[1]s}
spec:
  group: %[1]s
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, group)
}

// TestHealthRulesInApplyWaitAndTree: a --health-rules file makes apply
// --wait and tree judge a custom resource kstatus calls Current as soon as
// it exists (it has no conditions): without the file the wait passes at
// once; with it, a Widget without status is not ready, one whose operator
// wrote phase Broken fails the wait at once (the timeout is ten minutes),
// and tree shows Failed, then Current once the phase is Ready. A rule
// file that does not compile is an error naming the rule.
func TestHealthRulesInApplyWaitAndTree(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	group := ns + ".widgets.test"
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group}})
	})
	dir, ruleDir := t.TempDir(), t.TempDir()
	writeFiles(t, dir, map[string]string{
		"crd.yaml":    widgetCRD(group),
		"widget.yaml": fmt.Sprintf("apiVersion: %s/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\n", group),
	})
	rulesFile, badFile := filepath.Join(ruleDir, "widgets.yaml"), filepath.Join(ruleDir, "bad.yaml")
	writeFiles(t, ruleDir, map[string]string{
		"widgets.yaml": fmt.Sprintf("- apiVersion: %s/v1\n  kind: Widget\n  failed: self.status.phase == 'Broken'\n  current: self.status.phase == 'Ready'\n", group),
		"bad.yaml":     fmt.Sprintf("- apiVersion: %s/v1\n  kind: Widget\n  current: \"'ready'\"\n", group),
	})
	subject := fmt.Sprintf("Widget.%s/%s/w", group, ns)

	wantCode(t, gitsyncIn(t, ns, "apply", dir, "--wait", "--timeout", "1m"), 0)
	r := gitsyncIn(t, ns, "apply", dir, "--wait", "--timeout", "2s", "--health-rules", rulesFile)
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, subject+" is InProgress") || !strings.Contains(r.stderr, "no such key: status") {
		t.Errorf("apply --wait with the rule, the Widget without status:\n%s", r)
	}

	setWidgetPhase(t, ns, group, "Broken")
	r = gitsyncIn(t, ns, "apply", dir, "--wait", "--timeout", "10m", "--health-rules", rulesFile)
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, subject+" failed: health rule "+group+"/Widget: failed is true") {
		t.Errorf("apply --wait with the rule, the Widget Broken:\n%s", r)
	}

	c := statusClient(t)
	createGitSync(t, c, ns, "web", gitsyncv1.GitSyncStatus{Inventory: &gitsyncv1.Inventory{Entries: []gitsyncv1.InventoryEntry{
		{ID: object.ID{Group: group, Kind: "Widget", Namespace: ns, Name: "w"}.Key(), Version: "v1"},
	}}})
	treeSays := func(want string, args ...string) {
		t.Helper()
		r := gitsyncIn(t, ns, append([]string{"tree", "web"}, args...)...)
		wantCode(t, r, 0)
		if got := lines(r.stdout, subject+" "); len(got) != 1 || !strings.Contains(got[0], want) {
			t.Errorf("tree %v: want %s %s, got:\n%s", args, subject, want, r)
		}
	}
	treeSays("Current")
	treeSays("Failed", "--health-rules", rulesFile)
	setWidgetPhase(t, ns, group, "Ready")
	treeSays("Current", "--health-rules", rulesFile)

	r = gitsyncIn(t, ns, "tree", "web", "--health-rules", badFile)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "health rule "+group+"/Widget current") || !strings.Contains(r.stderr, "want bool") {
		t.Errorf("tree with a rule that returns a string:\n%s", r)
	}
}

// setWidgetPhase writes status.phase as the Widget's operator would.
func setWidgetPhase(t *testing.T, ns, group, phase string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(group + "/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName("w")
	patch := []byte(fmt.Sprintf(`{"status":{"phase":%q}}`, phase))
	if err := env.Client.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}
