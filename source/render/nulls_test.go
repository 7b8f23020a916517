package render

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestRenderReadsNullsAsTheAPIServer: a null is read as the apiserver reads
// it when it decodes the kind's Go type: a struct field's null is the
// field's absence (dropped: Traefik's empty annotations, resources, env,
// tolerations; kubectl's creationTimestamp), a null string entry of a map
// or list is "" (a ConfigMap key, a label, an argument), whatever the
// render path (plain, kustomize output, Helm). A custom resource keeps its
// nulls outside metadata (its CRD's schema decides), and a null in a
// kustomize patch keeps its strategic-merge meaning (it deletes).
//
// Checked by removing the normalizeNulls call from validateObject: every
// case then keeps its nulls.
func TestRenderReadsNullsAsTheAPIServer(t *testing.T) {
	repo := writeRepo(t, map[string]string{
		"plain/deploy.yaml":     nullDeployment,
		"kustomize/deploy.yaml": nullDeployment,
		"plain/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels:\ndata:\n  a: \"1\"\n  b:\n",
		"plain/cr.yaml":         "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  annotations:\n  labels:\n    x:\nspec:\n  values:\n    drop:\n  size:\n",
		"kustomize/kustomization.yaml": `resources: [deploy.yaml]
patches:
- patch: |
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      replicas: null
`,
	})
	// kustomized: the patch's null deleted replicas, and kustomize's merge
	// dropped the null entries of labels and nodeSelector itself.
	deploy := func(kustomized bool) map[string]any {
		labels := map[string]any{"app": "web", "tier": ""}
		nodeSelector := map[string]any{"disk": ""}
		spec := map[string]any{
			"replicas": float64(3),
			"strategy": map[string]any{"rollingUpdate": map[string]any{}},
			"template": map[string]any{
				"metadata": map[string]any{},
				"spec": map[string]any{
					"containers": []any{map[string]any{
						"name": "web", "image": "nginx", "args": []any{"--a", ""},
						"resources": map[string]any{"requests": map[string]any{"cpu": "1m"}},
					}},
					"nodeSelector": nodeSelector,
				},
			},
		}
		if kustomized {
			delete(spec, "replicas")
			delete(labels, "tier")
			delete(nodeSelector, "disk")
		}
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "labels": labels}, "spec": spec}
	}
	tests := []struct {
		path string
		want map[string]map[string]any
	}{
		{"plain", map[string]map[string]any{
			"ConfigMap/cm": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm"},
				"data": map[string]any{"a": "1", "b": ""}},
			"Deployment/web": deploy(false),
			"Widget.example.com/w": {"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"name": "w", "labels": map[string]any{"x": ""}},
				"spec":     map[string]any{"values": map[string]any{"drop": nil}, "size": nil}},
		}},
		{"kustomize", map[string]map[string]any{"Deployment/web": deploy(true)}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r, err := Render(context.Background(), repo, tt.path, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]map[string]any{}
			for i, o := range r.Objects {
				got[subjects(r.Objects)[i]] = roundTrip(t, o.Object)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

// nullDeployment renders keys with nothing under them the way charts do.
const nullDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  creationTimestamp: null
  annotations:
  labels:
    app: web
    tier:
spec:
  replicas: 3
  strategy:
    rollingUpdate:
      maxSurge:
  template:
    metadata:
      annotations:
    spec:
      containers:
      - name: web
        image: nginx
        args: [--a, null]
        env:
        resources:
          limits:
          requests:
            cpu: 1m
      nodeSelector:
        disk:
      tolerations:
`

// roundTrip gives numbers one type (float64), whichever decoder made them.
func roundTrip(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
