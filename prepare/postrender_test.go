package prepare_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/prepare"
	"gitsync.dev/gitsync/redact"
	"gitsync.dev/gitsync/source/postrender"
	"gitsync.dev/gitsync/source/render"
	"gitsync.dev/gitsync/source/sops"
	"gitsync.dev/gitsync/source/sops/sopstest"
)

const password = "hunter2-decrypted-plaintext"

func TestSettingsCarryPostRenderChanges(t *testing.T) {
	gs := &v1.GitSync{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team"}, Spec: v1.GitSyncSpec{
		Patches: []v1.Patch{{Patch: "[]", Optional: true, Target: &v1.PatchSelector{Kind: "Deployment", LabelSelector: "a=b"}}},
		Images:  []v1.Image{{Name: "nginx", NewTag: "1.27"}},
		CommonMetadata: &v1.CommonMetadata{Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{"owner": "x"}},
	}}
	s, err := prepare.Settings(gs)
	if err != nil {
		t.Fatal(err)
	}
	want := postrender.Options{
		Patches:     []postrender.Patch{{Patch: "[]", Optional: true, Target: &postrender.Selector{Kind: "Deployment", LabelSelector: "a=b"}}},
		Images:      []postrender.Image{{Name: "nginx", NewTag: "1.27"}},
		Labels:      map[string]string{"team": "a"},
		Annotations: map[string]string{"owner": "x"},
	}
	if diff := cmp.Diff(want, s.PostRender); diff != "" {
		t.Errorf("post-render settings (-want +got):\n%s", diff)
	}
	none, err := prepare.Settings(&v1.GitSync{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team"}})
	if err != nil || none.PostRenderKey() != "" {
		t.Errorf("a GitSync without changes has post-render key %q (%v)", none.PostRenderKey(), err)
	}
}

// TestPatchesCannotMoveDecryptedValues: whatever a post-render patch does to
// an encrypted Secret's ciphertext (turn the Secret into a ConfigMap, paste
// its ciphertext and SOPS metadata into a ConfigMap), decryption, which runs
// after the render, refuses to put the plaintext anywhere but the Secret.
//
// Checked by letting sops.Objects skip its Secret check (Object alone): each
// case then hands the plaintext to a ConfigMap.
func TestPatchesCannotMoveDecryptedValues(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := sopstest.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: "+password+"\n"),
		sopstest.Options{EncryptedRegex: "^(data|stringData)$"}, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	var encDoc map[string]any
	if err := yaml.Unmarshal(enc, &encDoc); err != nil {
		t.Fatal(err)
	}
	pasted, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "open"},
		"data": map[string]any{"password": encDoc["stringData"].(map[string]any)["password"]}, "sops": encDoc["sops"]})
	dir := t.TempDir()
	for name, content := range map[string]string{
		"app/secret.enc.yaml": string(enc),
		"app/open.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: open\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, patch := range map[string]v1.Patch{
		"the Secret made a ConfigMap": {Target: &v1.PatchSelector{Kind: "Secret", Name: "db"},
			Patch: `[{"op":"replace","path":"/kind","value":"ConfigMap"}]`},
		"ciphertext pasted into a ConfigMap": {Patch: string(pasted)},
		"ciphertext copied into a ConfigMap by target": {Target: &v1.PatchSelector{Kind: "ConfigMap", Name: "open"},
			Patch: string(pasted)},
	} {
		t.Run(name, func(t *testing.T) {
			gs := &v1.GitSync{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team"},
				Spec: v1.GitSyncSpec{Patches: []v1.Patch{patch}}}
			settings, err := prepare.Settings(gs)
			if err != nil {
				t.Fatal(err)
			}
			r, err := render.Render(context.Background(), dir, "app", render.Options{Settings: settings})
			if err != nil {
				t.Fatal(err)
			}
			files := func(mac string) (string, []byte, bool) {
				f, ok := r.SOPS[mac]
				return f.Path, f.Data, ok
			}
			out, err := prepare.Objects(r.Objects, files, prepare.Inputs{Redactor: redact.New(),
				Keys: func() ([]age.Identity, error) { return []age.Identity{id}, nil }})
			var se *sops.Error
			if !errors.As(err, &se) || se.Problem != sops.ProblemKind {
				for _, o := range out {
					b, _ := json.Marshal(o.Object)
					if o.GetKind() != "Secret" && strings.Contains(string(b), password) {
						t.Errorf("%s/%s holds the plaintext", o.GetKind(), o.GetName())
					}
				}
				t.Fatalf("prepare.Objects = %v, want a refusal to decrypt outside the Secret", err)
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("error quotes the plaintext: %v", err)
			}
		})
	}
}
