package sops_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/source/sops"
	"gitsync.dev/gitsync/source/sops/sopstest"
)

const secretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: app
type: Opaque
stringData:
  password: hunter2-plaintext
  port: "5432"
data:
  token: c2VjcmV0LXRva2Vu
`

func newKey(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func encrypt(t *testing.T, plain string, id *age.X25519Identity) []byte {
	t.Helper()
	enc, err := sopstest.Encrypt([]byte(plain), sopstest.Options{EncryptedRegex: "^(data|stringData)$"}, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(enc, []byte("hunter2")) {
		t.Fatal("encrypted file holds the plaintext")
	}
	return enc
}

// decode reads the objects of a file as the render does (order lost).
func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func TestDecryptObject(t *testing.T) {
	id := newKey(t)
	enc := encrypt(t, secretYAML, id)
	p, err := sops.Decrypt("secrets/db.yaml", enc, []age.Identity{newKey(t), id})
	if err != nil {
		t.Fatal(err)
	}
	obj := decode(t, enc)[0]
	if !sops.IsEncrypted(obj) {
		t.Fatal("IsEncrypted = false")
	}
	got, paths, err := p.Object(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := decode(t, []byte(secretYAML))[0]
	if diff := cmp.Diff(want.Object, got.Object); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"data.token", "stringData.password", "stringData.port"}, slices.Sorted(slices.Values(paths))); diff != "" {
		t.Errorf("paths (-want +got)\n%s", diff)
	}
	if !sops.IsEncrypted(obj) || obj.Object["stringData"].(map[string]any)["password"] == "hunter2-plaintext" {
		t.Error("Object changed its input")
	}
}

func TestDecryptMultiDocumentFile(t *testing.T) {
	id := newKey(t)
	second := strings.Replace(secretYAML, "name: db", "name: db2", 1)
	enc := encrypt(t, secretYAML+"---\n"+second, id)
	p, err := sops.Decrypt("s.yaml", enc, []age.Identity{id})
	if err != nil {
		t.Fatal(err)
	}
	objs := decode(t, enc)
	if len(objs) != 2 || sops.MACOf(objs[0]) != sops.MACOf(objs[1]) {
		t.Fatalf("want two documents with one mac")
	}
	for _, o := range objs {
		if _, _, err := p.Object(o); err != nil {
			t.Error(err)
		}
	}
}

func TestDecryptRefuses(t *testing.T) {
	id := newKey(t)
	enc := string(encrypt(t, secretYAML, id))
	// Two ciphertexts, to swap them (each is bound to its key path).
	doc := decode(t, []byte(enc))[0]
	pw := doc.Object["stringData"].(map[string]any)["password"].(string)
	port := doc.Object["stringData"].(map[string]any)["port"].(string)
	tests := []struct {
		name    string
		file    string
		ids     []age.Identity
		problem sops.Problem
	}{
		{"wrong key", enc, []age.Identity{newKey(t)}, sops.ProblemKey},
		{"no key", enc, nil, sops.ProblemKey},
		{"unencrypted value changed", strings.Replace(enc, "name: db", "name: other", 1), []age.Identity{id}, sops.ProblemMAC},
		{"value added", strings.Replace(enc, "type: Opaque", "type: Opaque\nimmutable: true", 1), []age.Identity{id}, sops.ProblemMAC},
		{"value removed", strings.Replace(enc, "type: Opaque\n", "", 1), []age.Identity{id}, sops.ProblemMAC},
		{"ciphertexts swapped", strings.NewReplacer(pw, port, port, pw).Replace(enc), []age.Identity{id}, sops.ProblemMAC},
		{"ciphertext replaced by plaintext", strings.Replace(enc, pw, "injected", 1), []age.Identity{id}, sops.ProblemMAC},
		{"no sops metadata", secretYAML, []age.Identity{id}, sops.ProblemFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sops.Decrypt("secrets/db.yaml", []byte(tt.file), tt.ids)
			var se *sops.Error
			if !errors.As(err, &se) || se.Problem != tt.problem {
				t.Fatalf("err = %v, want problem %q", err, tt.problem)
			}
			msg := err.Error()
			if !strings.Contains(msg, "secrets/db.yaml: ") || strings.Contains(msg, "hunter2") || strings.Contains(msg, "AGE-SECRET-KEY") {
				t.Errorf("message %q must name the file and hold no secret", msg)
			}
		})
	}
}

func TestReorderedKeysFailTheMAC(t *testing.T) {
	id := newKey(t)
	enc := string(encrypt(t, secretYAML, id))
	// Move "type: Opaque" below the data: same values, another order.
	moved := strings.Replace(enc, "type: Opaque\n", "", 1)
	moved = strings.Replace(moved, "sops:\n", "type: Opaque\nsops:\n", 1)
	_, err := sops.Decrypt("f", []byte(moved), []age.Identity{id})
	var se *sops.Error
	if !errors.As(err, &se) || se.Problem != sops.ProblemMAC {
		t.Fatalf("err = %v, want a MAC problem", err)
	}
}

func TestObjectRefusesForeignCiphertext(t *testing.T) {
	id := newKey(t)
	p, err := sops.Decrypt("a.yaml", encrypt(t, secretYAML, id), []age.Identity{id})
	if err != nil {
		t.Fatal(err)
	}
	other := decode(t, encrypt(t, secretYAML, id))[0]
	if _, _, err := p.Object(other); err == nil || !strings.Contains(err.Error(), "is not one of the file's") {
		t.Fatalf("err = %v", err)
	}
}

func TestIdentitiesFromSecret(t *testing.T) {
	id := newKey(t)
	ids, err := sops.IdentitiesFromSecret(map[string][]byte{
		"a.agekey": []byte("# test key\n" + id.String() + "\n"), "README": []byte("x"),
	})
	if err != nil || len(ids) != 1 {
		t.Fatalf("ids = %d, err = %v", len(ids), err)
	}
	_, err = sops.IdentitiesFromSecret(map[string][]byte{"b.agekey": []byte("AGE-SECRET-KEY-1NOTAKEY-do-not-print")})
	if err == nil || strings.Contains(err.Error(), "do-not-print") || !strings.Contains(err.Error(), `"b.agekey"`) {
		t.Fatalf("err = %v, want one naming the key only", err)
	}
	if _, err := sops.IdentitiesFromSecret(map[string][]byte{"identity": []byte(id.String())}); err == nil {
		t.Fatal("a Secret without .agekey keys was accepted")
	}
}

func TestFileMAC(t *testing.T) {
	id := newKey(t)
	enc := encrypt(t, secretYAML+"---\n"+strings.Replace(secretYAML, "name: db", "name: db2", 1), id)
	mac, ok := sops.FileMAC(enc)
	if !ok || mac != sops.MACOf(decode(t, enc)[1]) {
		t.Fatalf("FileMAC = %q, %v; want the documents' mac", mac, ok)
	}
	for _, plain := range []string{secretYAML, "sops: 1\n", "a: [\n"} {
		if _, ok := sops.FileMAC([]byte(plain)); ok {
			t.Errorf("FileMAC(%q) ok", plain)
		}
	}
}
