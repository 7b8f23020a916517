package sops_test

import (
	"errors"
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
