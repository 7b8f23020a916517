package render

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchManifests writes n objects (Deployments, Services, ConfigMaps and
// ServiceAccounts in turn) as 10-document files spread over 10 directories
// below dir, and returns the files' slash paths relative to dir.
func benchManifests(b *testing.B, dir string, n int) []string {
	b.Helper()
	var files []string
	var doc strings.Builder
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("team-%d", i%7)
		switch i % 4 {
		case 0:
			fmt.Fprintf(&doc, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%d
  namespace: %s
  labels: {app: app-%d, tier: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: app-%d}
  template:
    metadata:
      labels: {app: app-%d}
    spec:
      containers:
        - name: app
          image: registry.example.com/app:1.%d.0
          ports: [{containerPort: 8080}]
          resources:
            requests: {cpu: 100m, memory: 128Mi}
`, i, ns, i, i, i, i)
		case 1:
			fmt.Fprintf(&doc, "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-%d\n  namespace: %s\nspec:\n  selector: {app: app-%d}\n  ports: [{port: 80, targetPort: 8080}]\n", i, ns, i-1)
		case 2:
			fmt.Fprintf(&doc, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: %s\ndata:\n  config.yaml: |\n    level: info\n    id: %d\n", i, ns, i)
		case 3:
			fmt.Fprintf(&doc, "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa-%d\n  namespace: %s\n", i, ns)
		}
		doc.WriteString("---\n")
		if i%10 == 9 || i == n-1 {
			name := fmt.Sprintf("dir-%d/file-%03d.yaml", (i/10)%10, i/10)
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(doc.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			files = append(files, name)
			doc.Reset()
		}
	}
	return files
}

// BenchmarkRender1000 renders 1,000 manifests from 100 files, as a plain
// directory and through a kustomization (namePrefix + labels) over the same
// files. Figures are recorded in bench/RESULTS.md.
func BenchmarkRender1000(b *testing.B) {
	root := b.TempDir()
	benchManifests(b, filepath.Join(root, "plain"), 1000)
	files := benchManifests(b, filepath.Join(root, "kustomize"), 1000)
	k := kustomizeHeader + "namePrefix: prod-\nlabels:\n  - pairs: {env: prod}\nresources:\n  - " + strings.Join(files, "\n  - ") + "\n"
	if err := os.WriteFile(filepath.Join(root, "kustomize", "kustomization.yaml"), []byte(k), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, path string }{{"plain", "plain"}, {"kustomize", "kustomize"}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, err := Render(context.Background(), root, bc.path, DefaultOptions())
				if err != nil {
					b.Fatal(err)
				}
				if len(got.Objects) != 1000 {
					b.Fatalf("rendered %d objects, want 1000", len(got.Objects))
				}
			}
		})
	}
}
