package render

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// writeTree creates files under dir from a map of slash paths to contents.
// A content of "symlink:TARGET" makes a symlink to TARGET instead; a content
// of "sparse:N" makes a sparse file that claims N bytes.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasPrefix(content, "symlink:"):
			err = os.Symlink(strings.TrimPrefix(content, "symlink:"), p)
		case content == "fifo:":
			err = syscall.Mkfifo(p, 0o644)
		case strings.HasPrefix(content, "sparse:"):
			var size int64
			fmt.Sscan(strings.TrimPrefix(content, "sparse:"), &size)
			if err = os.WriteFile(p, nil, 0o644); err == nil {
				err = os.Truncate(p, size)
			}
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// configMap returns a small valid manifest.
func configMap(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: shop\n"
}

// aliasBomb is the "billion laughs" document: levels of nine aliases each.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n")
	b.WriteString(`l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	for i := 1; i <= levels; i++ {
		ref := fmt.Sprintf("*l%d", i-1)
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.Repeat(ref+",", 8)+ref)
	}
	return b.String()
}

const kustomizeHeader = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"

func TestRenderRefusesBadInput(t *testing.T) {
	tests := []struct {
		name string
		// files are written into repo/, the render root; outside/ is a sibling
		// directory that must never be read.
		files   map[string]string
		path    string
		opts    func(*Options)
		class   error
		message string // a substring the error must contain
	}{
		{
			name:  "symlink to /etc/passwd",
			files: map[string]string{"repo/app.yaml": "symlink:/etc/passwd"},
			class: ErrOutsideRoot, message: "app.yaml: resolves outside the repository root",
		},
		{
			name:  "symlinked directory to ../",
			files: map[string]string{"repo/ok.yaml": configMap("a"), "repo/up": "symlink:..", "outside/x.yaml": configMap("x")},
			class: ErrOutsideRoot, message: "up: resolves outside",
		},
		{
			name:  "relative symlink that climbs out",
			files: map[string]string{"repo/deploy/x.yaml": "symlink:../../outside/x.yaml", "outside/x.yaml": configMap("x")},
			class: ErrOutsideRoot,
		},
		{
			name:  "render path ../",
			files: map[string]string{"repo/ok.yaml": configMap("a"), "outside/x.yaml": configMap("x")},
			path:  "../outside",
			class: ErrOutsideRoot, message: "path leaves the repository root",
		},
		{
			name:  "render path through a symlink out",
			files: map[string]string{"repo/deploy": "symlink:../outside", "outside/x.yaml": configMap("x")},
			path:  "deploy",
			class: ErrOutsideRoot,
		},
		{
			name: "kustomize ../../ resource",
			files: map[string]string{
				"repo/app/kustomization.yaml": kustomizeHeader + "resources:\n  - ../../outside\n",
				"outside/kustomization.yaml":  kustomizeHeader + "resources: [x.yaml]\n",
				"outside/x.yaml":              configMap("x"),
			},
			path:  "app",
			class: ErrOutsideRoot, message: `app/kustomization.yaml: resources entry "../../outside"`,
		},
		{
			name: "kustomize resource symlinked out",
			files: map[string]string{
				"repo/kustomization.yaml":    kustomizeHeader + "resources:\n  - base\n",
				"repo/base":                  "symlink:../outside",
				"outside/kustomization.yaml": kustomizeHeader + "resources: [x.yaml]\n",
				"outside/x.yaml":             configMap("x"),
			},
			class: ErrOutsideRoot,
		},
		{
			name: "kustomize component outside",
			files: map[string]string{
				"repo/kustomization.yaml":    kustomizeHeader + "components:\n  - ../outside\n",
				"outside/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
			},
			class: ErrOutsideRoot, message: "components entry",
		},
		{
			name: "kustomize patch outside",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "resources: [cm.yaml]\npatches:\n  - path: ../../../../../../etc/passwd\n",
				"repo/cm.yaml":            configMap("a"),
			},
			class: ErrOutsideRoot, message: "patches entry",
		},
		{
			name: "kustomize configMapGenerator file absolute",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "configMapGenerator:\n  - name: x\n    files: [passwd=/etc/passwd]\n",
			},
			class: ErrOutsideRoot, message: "absolute paths are not allowed",
		},
		{
			name: "kustomize configMapGenerator file symlinked to /etc/passwd",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "configMapGenerator:\n  - name: x\n    files: [passwd]\n",
				"repo/passwd":             "symlink:/etc/passwd",
			},
			class: ErrOutsideRoot, message: "configMapGenerator files entry",
		},
		{
			name: "kustomize resource file symlinked to /etc/passwd",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "resources: [app.yaml]\n",
				"repo/app.yaml":           "symlink:/etc/passwd",
			},
			class: ErrOutsideRoot,
		},
		{
			name: "kustomize remote git base",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "resources:\n  - https://github.com/org/repo//deploy?ref=main\n",
			},
			class: errRemoteDisabled, message: "remote bases and resources are disabled",
		},
		{
			name: "kustomize remote shorthand base",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "resources:\n  - github.com/org/repo/deploy?ref=v1\n",
			},
			class: errRemoteDisabled,
		},
		{
			name: "kustomize remote patch file, credentials redacted",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "resources: [cm.yaml]\npatches:\n  - path: https://user:s3cret@example.com/p.yaml\n",
				"repo/cm.yaml":            configMap("a"),
			},
			class: errRemoteDisabled, message: "https://***@example.com/p.yaml",
		},
		{
			name: "kustomize helm chart",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "helmCharts:\n  - name: nginx\n    repo: https://charts.example.com\n",
			},
			class: errRemoteDisabled, message: "helmCharts are disabled",
		},
		{
			name: "kustomize missing resource is not fetched",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "resources: [nothing-here]\n",
			},
			class: errNotFound, message: `resources entry "nothing-here": not found`,
		},
		{
			name: "duplicate objects across files",
			files: map[string]string{
				"repo/a.yaml": configMap("same"),
				"repo/b.yaml": "# header\n---\n" + configMap("other") + "---\n" + configMap("same"),
			},
			class: errDuplicate, message: "b.yaml:9: document 2: duplicate object ConfigMap/shop/same, first defined in a.yaml:1: document 1",
		},
		{
			name: "duplicate inside a List",
			files: map[string]string{
				"repo/l.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(configMap("x"), "\n", "\n  ") + "\n- " +
					strings.ReplaceAll(configMap("x"), "\n", "\n  "),
			},
			class: errDuplicate, message: "l.yaml:1: document 1: items[1]: duplicate object ConfigMap/shop/x",
		},
		{
			name: "duplicate in kustomize output",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "resources: [a.yaml, b.yaml]\n",
				"repo/a.yaml":             configMap("x"),
				"repo/b.yaml":             configMap("x"),
			},
			class: errKustomize, message: "already registered",
		},
		{
			name: "missing kind",
			files: map[string]string{
				"repo/deploy/app.yaml": configMap("a") + "---\n" + configMap("b") + "---\napiVersion: v1\nmetadata: {name: c}\n",
			},
			class: errInvalidObject, message: "deploy/app.yaml:13: document 3: missing kind",
		},
		{
			name:  "missing apiVersion",
			files: map[string]string{"repo/a.yaml": "kind: ConfigMap\nmetadata: {name: c}\n"},
			class: errInvalidObject, message: "a.yaml:1: document 1: missing apiVersion",
		},
		{
			name:  "missing name",
			files: map[string]string{"repo/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: x}\n"},
			class: errInvalidObject, message: "missing metadata.name",
		},
		{
			name:  "generateName",
			files: map[string]string{"repo/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n"},
			class: errInvalidObject, message: "generateName is not supported",
		},
		{
			name:  "scalar document",
			files: map[string]string{"repo/a.yaml": "just a string\n"},
			class: errInvalidObject, message: "a.yaml:1: document 1: not an object",
		},
		{
			name:  "List item missing kind",
			files: map[string]string{"repo/a.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  metadata: {name: x}\n"},
			class: errInvalidObject, message: "items[0]: missing kind",
		},
		{
			name: "List inside a List",
			files: map[string]string{"repo/a.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  metadata: {name: x}\n" +
				"  items: [{apiVersion: v1, kind: ConfigMap, metadata: {name: y}}]\n"},
			class: errInvalidObject, message: "items[0]: a List is not an object",
		},
		{
			name:  "kind that is not a string",
			files: map[string]string{"repo/a.yaml": "apiVersion: v1\nkind: [x]\nmetadata: {name: x}\n"},
			class: errInvalidObject, message: "kind is not a string",
		},
		{
			name:  "invalid YAML reports the file line of the problem, once",
			files: map[string]string{"repo/a.yaml": configMap("a") + "---\napiVersion: v1\nkind: ConfigMap\n  bad: indent\n"},
			class: errInvalidYAML, message: "a.yaml:9: document 2: invalid YAML: mapping values are not allowed in this context",
		},
		{
			name:  "invalid YAML in a Secret gives the line once and withholds the parser's text",
			files: map[string]string{"repo/s.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: s3cret\n  bad: indent\n bad: again\n"},
			class: errInvalidYAML, message: "s.yaml:7: document 1: invalid YAML: the YAML parser's message is withheld",
		},
		{
			name:  "invalid JSON",
			files: map[string]string{"repo/a.json": `{"apiVersion": "v1",`},
			class: errInvalidYAML, message: "a.json: invalid JSON",
		},
		{
			name:  "2 GiB-claimed sparse file",
			files: map[string]string{"repo/ok.yaml": configMap("a"), "repo/huge.yaml": "sparse:2147483648"},
			class: ErrTooLarge, message: "huge.yaml: file is 2147483648 bytes, over the 4194304-byte limit",
		},
		{
			name: "2 GiB-claimed file in a kustomization",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "resources: [huge.yaml]\n",
				"repo/huge.yaml":          "sparse:2147483648",
			},
			class: ErrTooLarge, message: "huge.yaml: file is 2147483648 bytes",
		},
		{
			name:  "total bytes cap",
			files: map[string]string{"repo/a.yaml": configMap("a"), "repo/b.yaml": configMap("b")},
			opts:  func(o *Options) { o.MaxTotalBytes = int64(len(configMap("a"))) + 10 },
			class: ErrTooLarge, message: "b.yaml: input exceeds the",
		},
		{
			name:  "file count cap",
			files: map[string]string{"repo/a.yaml": configMap("a"), "repo/b.yaml": configMap("b"), "repo/c.yaml": configMap("c")},
			opts:  func(o *Options) { o.MaxFiles = 2 },
			class: ErrTooLarge, message: "c.yaml: more than 2 files",
		},
		{
			name:  "alias bomb",
			files: map[string]string{"repo/bomb.yaml": aliasBomb(9)},
			class: ErrTooLarge, message: "bomb.yaml:1: document 1: YAML alias expansion too large",
		},
		{
			name:  "alias bomb below go-yaml's own limit",
			files: map[string]string{"repo/bomb.yaml": aliasBomb(6)},
			class: ErrTooLarge, message: "alias expansion too large",
		},
		{
			name: "alias bomb in a kustomize resource",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "resources: [bomb.yaml]\n",
				"repo/bomb.yaml":          aliasBomb(9),
			},
			class: ErrTooLarge, message: "alias expansion too large",
		},
		{
			name:  "absolute render path",
			files: map[string]string{"repo/a.yaml": configMap("a")},
			path:  "/etc",
			class: ErrOutsideRoot, message: "path must be relative",
		},
		{
			name: "FIFO as a kustomize resource does not block",
			files: map[string]string{
				"repo/kustomization.yaml": kustomizeHeader + "resources: [pipe.yaml]\n",
				"repo/pipe.yaml":          "fifo:",
			},
			class: errKustomize,
		},
		{
			name:  "FIFO in a plain directory is skipped, not opened",
			files: map[string]string{"repo/pipe.yaml": "fifo:", "repo/a.yaml": configMap("a"), "repo/b.yaml": configMap("a")},
			class: errDuplicate,
		},
		{
			name:  "render path not found",
			files: map[string]string{"repo/a.yaml": configMap("a")},
			path:  "nope",
			class: errNotFound, message: "nope: not found",
		},
		{
			name:  "kustomization below a plain directory escaping the root",
			files: map[string]string{"repo/a.yaml": configMap("a"), "repo/sub/kustomization.yaml": kustomizeHeader + "resources:\n- ../../outside\n", "outside/x.yaml": configMap("x")},
			class: ErrOutsideRoot,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tt.files)
			opts := DefaultOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			path := tt.path
			if path == "" {
				path = "."
			}
			got, err := Render(context.Background(), filepath.Join(dir, "repo"), path, opts)
			if got != nil {
				t.Errorf("Render returned %d objects with error %v, want nil result", len(got.Objects), err)
			}
			if !errors.Is(err, tt.class) {
				t.Fatalf("Render error = %v, want class %v", err, tt.class)
			}
			var re *Error
			if !errors.As(err, &re) {
				t.Errorf("error %T is not an *Error", err)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not contain %q", err, tt.message)
			}
			for _, leak := range []string{"s3cret", "root:", dir} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error %q leaks %q", err, leak)
				}
			}
		})
	}
}

func TestRenderCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := Render(ctx, "testdata/render", "plain", DefaultOptions())
	if got != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Render = %v, %v; want nil, context.Canceled", got, err)
	}
}
