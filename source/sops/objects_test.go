package sops_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/source/sops"
)

func TestObjects(t *testing.T) {
	id := newKey(t)
	enc := encrypt(t, secretYAML, id)
	plainCM := decode(t, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"))[0]
	objs := []*unstructured.Unstructured{plainCM, decode(t, enc)[0]}
	mac, _ := sops.FileMAC(enc)
	files := func(m string) (string, []byte, bool) { return "deploy/db.enc.yaml", enc, m == mac }
	keys := func() ([]age.Identity, error) { return []age.Identity{id}, nil }

	out, hidden, err := sops.Objects(objs, files, keys)
	if err != nil {
		t.Fatal(err)
	}
	if out[0] != plainCM || sops.IsEncrypted(out[1]) || !sops.IsEncrypted(objs[1]) {
		t.Error("want the plain object passed through, the encrypted one replaced by a copy, the input unchanged")
	}
	if !strings.Contains(strings.Join(hidden, ","), "hunter2-plaintext") {
		t.Errorf("hidden values %d do not hold the password", len(hidden))
	}

	noKeys := func() ([]age.Identity, error) { return nil, errors.New("set spec.decryption") }
	_, _, err = sops.Objects(objs, files, noKeys)
	var oe *sops.ObjectError
	if !errors.As(err, &oe) || err.Error() != "Secret/app/db (deploy/db.enc.yaml) is SOPS-encrypted: set spec.decryption" {
		t.Errorf("err = %v", err)
	}
	_, _, err = sops.Objects(objs, files, func() ([]age.Identity, error) { return []age.Identity{newKey(t)}, nil })
	if err == nil || !strings.HasPrefix(err.Error(), "Secret/app/db: cannot decrypt deploy/db.enc.yaml: none of the 1 age identities") {
		t.Errorf("err = %v", err)
	}
	_, _, err = sops.Objects(objs, nil, keys)
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "not read from a SOPS file") {
		t.Errorf("err = %v", err)
	}
}

// TestObjectsDecryptIntoSecretsOnly: a decrypted value lands only in a
// Secret the file holds, whatever the render did to it.
//
// Checked: with Objects calling Object (no kind check) each refused case
// decrypts, the patched ConfigMap carrying the password.
func TestObjectsDecryptIntoSecretsOnly(t *testing.T) {
	id := newKey(t)
	keys := func() ([]age.Identity, error) { return []age.Identity{id}, nil }
	one := func(enc []byte, change func(*unstructured.Unstructured)) error {
		obj := decode(t, enc)[0]
		if change != nil {
			change(obj)
		}
		mac, _ := sops.FileMAC(enc)
		files := func(m string) (string, []byte, bool) { return "deploy/db.enc.yaml", enc, m == mac }
		out, _, err := sops.Objects([]*unstructured.Unstructured{obj}, files, keys)
		if err == nil && out[0].GetKind() != "Secret" {
			t.Errorf("decrypted into a %s", out[0].GetKind())
		}
		return err
	}
	secret := encrypt(t, secretYAML, id)
	configMap := encrypt(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db, namespace: app}\ndata:\n  password: hunter2-plaintext\n", id)
	tests := []struct {
		name   string
		enc    []byte
		change func(*unstructured.Unstructured)
		want   string // "" for no error
	}{
		{"a Secret as written", secret, nil, ""},
		{"a Secret with a kustomize name prefix and namespace", secret, func(o *unstructured.Unstructured) {
			o.SetName("prod-db")
			o.SetNamespace("prod")
		}, ""},
		{"kind changed by a patch", secret, func(o *unstructured.Unstructured) { o.SetKind("ConfigMap") }, "the rendered object is a ConfigMap"},
		{"apiVersion changed by a patch", secret, func(o *unstructured.Unstructured) { o.SetAPIVersion("example.com/v1") }, "the rendered object is a Secret (example.com/v1)"},
		{"renamed to another Secret", secret, func(o *unstructured.Unstructured) { o.SetName("other") }, "Secret other is not that one"},
		{"a ConfigMap document", configMap, func(o *unstructured.Unstructured) { o.SetKind("Secret") }, "the document they come from is a ConfigMap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := one(tt.enc, tt.change)
			var de *sops.Error
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case tt.want != "" && (!errors.As(err, &de) || de.Problem != sops.ProblemKind || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want a %s problem saying %q", err, sops.ProblemKind, tt.want)
			case err != nil && strings.Contains(err.Error(), "hunter2"):
				t.Fatalf("err holds the plaintext: %v", err)
			}
		})
	}
}

// TestObjectsRefuseMACOnlyEncrypted: in a mac_only_encrypted file the MAC
// does not cover unencrypted values, so a kind edited by hand still
// verifies (shown with a file the sops CLI wrote); Objects refuses such a
// file whatever its kind says.
func TestObjectsRefuseMACOnlyEncrypted(t *testing.T) {
	dir, ids := realSOPS(t)
	data, err := os.ReadFile(filepath.Join(dir, "nested-maconly.enc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	edited := []byte(strings.Replace(string(data), "kind: ConfigMap", "kind: Secret", 1))
	if _, err := sops.Decrypt("edited", edited, ids); err != nil {
		t.Fatalf("the edited kind broke the MAC (then the mode would be safe): %v", err)
	}
	obj := decode(t, edited)[0]
	mac, _ := sops.FileMAC(edited)
	files := func(m string) (string, []byte, bool) { return "deploy/nested.enc.yaml", edited, m == mac }
	_, _, err = sops.Objects([]*unstructured.Unstructured{obj}, files, func() ([]age.Identity, error) { return ids, nil })
	var de *sops.Error
	if !errors.As(err, &de) || de.Problem != sops.ProblemKind || !strings.Contains(err.Error(), "mac_only_encrypted") {
		t.Fatalf("err = %v, want a refusal naming mac_only_encrypted", err)
	}
}
