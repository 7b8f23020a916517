package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/source/sops/sopstest"
)

// TestSubstituteAndDecryptFlags: diff and apply substitute --substitute and
// --substitute-from-file values and decrypt SOPS files with --age-key-file,
// as a GitSync would; the diff of a ConfigMap shows *** for the value that
// came from the file (a Secret's stand-in), and the decrypted Secret's
// value shows nowhere. Without --age-key-file the encrypted file is
// refused, naming it.
//
// Checked: with maskedWriter writing b unmasked, the file's value appears
// in the diff.
func TestSubstituteAndDecryptFlags(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	const token, password = "tok-93c1-decrypted", "pw-5d2e-from-file"
	enc, err := sopstest.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\nstringData:\n  env: ${ENV}\n  token: "+token+"\n"),
		sopstest.Options{EncryptedRegex: "^token$"}, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	dir, keys := t.TempDir(), t.TempDir()
	writeFiles(t, dir, map[string]string{
		"api.enc.yaml": string(enc),
		"app.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  env: \"${ENV}\"\n  db: \"${DB_PASSWORD}\"\n",
	})
	keyFile, varsFile := filepath.Join(keys, "key.agekey"), filepath.Join(keys, "vars.env")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(varsFile, []byte("# secrets\nDB_PASSWORD="+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	r := gitsyncIn(t, ns, "diff", dir, "--substitute", "ENV=prod", "--substitute-from-file", varsFile)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "api.enc.yaml") || !strings.Contains(r.stderr, "--age-key-file") {
		t.Errorf("without a key: want a refusal naming the file and --age-key-file\n%s", r)
	}

	flags := []string{"--substitute-from-file", varsFile, "--age-key-file", keyFile}
	wantCode(t, gitsyncIn(t, ns, append([]string{"apply", dir, "--substitute", "ENV=prod"}, flags...)...), 0)
	// Another ENV: both objects change, their unchanged hidden values are
	// context lines of the diff.
	r = gitsyncIn(t, ns, append([]string{"diff", dir, "--substitute", "ENV=staging"}, flags...)...)
	wantCode(t, r, 1)
	for _, want := range []string{"+  env: staging", "db: ***", "token: '***'"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("diff lacks %q\n%s", want, r)
		}
	}
	if strings.Contains(r.stdout+r.stderr, token) || strings.Contains(r.stdout+r.stderr, password) {
		t.Errorf("a hidden value is shown\n%s", r)
	}
	wantCode(t, gitsyncIn(t, ns, append([]string{"diff", dir, "--substitute", "ENV=prod"}, flags...)...), 0)
}

// TestSecretFileValueNotShownEscaped: a --substitute-from-file value the
// apiserver refuses in a label comes back quoted, its quote and backslash
// escaped; neither the value nor the parts around its escapes reach apply's
// or diff's output.
//
// Checked: with the process's redactor masking raw values only, the
// escaped value is printed.
func TestSecretFileValueNotShownEscaped(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir, keys := t.TempDir(), t.TempDir()
	writeFiles(t, dir, map[string]string{
		"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels:\n    token: \"${TOKEN}\"\n",
	})
	varsFile := filepath.Join(keys, "vars.env")
	if err := os.WriteFile(varsFile, []byte(`TOKEN=first-half"second-half\third-part`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"apply", "diff"} {
		r := gitsyncIn(t, ns, verb, dir, "--substitute-from-file", varsFile)
		if r.code == 0 {
			t.Fatalf("%s of an invalid label succeeded\n%s", verb, r)
		}
		out := r.stdout + r.stderr
		if !strings.Contains(out, "***") {
			t.Errorf("%s: want the refused value shown as ***\n%s", verb, r)
		}
		for _, leak := range []string{"first-half", "second-half", "third-part"} {
			if strings.Contains(out, leak) {
				t.Errorf("%s prints %q of the file's value\n%s", verb, leak, r)
			}
		}
	}
}

// TestDecryptOnlyIntoSecrets: the CLI decrypts as the agent does, into
// Secrets only: a kustomize patch that turns the encrypted Secret into a
// ConfigMap, and a mac_only_encrypted file (its kind not covered by its MAC,
// edited by hand), are refused naming the file, and nothing is applied.
//
// Checked: with sops.Objects not checking the kind, apply creates
// ConfigMap db holding the password.
func TestDecryptOnlyIntoSecrets(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	const password = "pw-0c7e-decrypted"
	enc, err := sopstest.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: "+password+"\n"),
		sopstest.Options{EncryptedRegex: "^stringData$"}, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	keys := t.TempDir()
	keyFile := filepath.Join(keys, "key.agekey")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	patched := t.TempDir()
	writeFiles(t, patched, map[string]string{
		"db.enc.yaml": string(enc),
		"kustomization.yaml": "resources: [db.enc.yaml]\npatches:\n- target: {kind: Secret, name: db}\n  options: {allowKindChange: true}\n" +
			"  patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: db\n",
	})
	r := gitsyncIn(t, ns, "apply", patched, "--age-key-file", keyFile)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "db.enc.yaml") || !strings.Contains(r.stderr, "Secrets only") || strings.Contains(r.stdout+r.stderr, password) {
		t.Errorf("a patch turning the Secret into a ConfigMap: want a refusal naming the file, without the value\n%s", r)
	}

	// The sops CLI's own mac_only_encrypted file, its kind edited by hand:
	// its MAC still verifies, and the file is refused all the same.
	real := filepath.Join("..", "..", "source", "sops", "testdata", "realsops")
	data, err := os.ReadFile(filepath.Join(real, "nested-maconly.enc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	maconly := t.TempDir()
	writeFiles(t, maconly, map[string]string{"nested.enc.yaml": strings.Replace(string(data), "kind: ConfigMap", "kind: Secret", 1)})
	r = gitsyncIn(t, ns, "apply", maconly, "--age-key-file", filepath.Join(real, "test-only.agekey"))
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "nested.enc.yaml") || !strings.Contains(r.stderr, "mac_only_encrypted") {
		t.Errorf("a mac_only_encrypted file: want a refusal naming it and the mode\n%s", r)
	}
	for _, name := range []string{"db", "nested"} {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s: %v, want nothing applied", name, err)
		}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("Secret %s: %v, want nothing applied", name, err)
		}
	}
}
