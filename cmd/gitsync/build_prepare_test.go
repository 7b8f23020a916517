package main

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gitsynctest"
	"gitsync.dev/gitsync/source/sops/sopstest"
)

// TestBuildGitSyncUsesItsVariablesAndKey: build --gitsync substitutes the
// GitSync's spec.substitute and spec.substituteFrom (a Secret) and decrypts
// its SOPS file with the key of its spec.decryption Secret, read with the
// user's identity, without a flag: what it prints is what the agent
// applied, and no Secret-born value shows, raw or base64. Flags still win:
// --substitute replaces the GitSync's variables.
//
// Checked: with desired calling prep.prepare (the flags only), build exits
// 2 asking for --age-key-file.
func TestBuildGitSyncUsesItsVariablesAndKey(t *testing.T) {
	ns := env.Namespace(t)
	startRun(t, ns, "--leader-elect=false")
	c := gitsyncClient(t)
	ctx := context.Background()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	const token, password = "tok-5e21-decrypted", "pw-90c4-from-secret"
	enc, err := sopstest.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\nstringData:\n  token: "+token+"\n"),
		sopstest.Options{EncryptedRegex: "^token$"}, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	dir := newRunRepo(t)
	commit := commitFiles(t, dir, map[string]string{
		"deploy/api.enc.yaml": string(enc),
		"deploy/app.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  env: \"${ENV}\"\n  db: \"${DB_PASSWORD}\"\n",
	})
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vars"}, StringData: map[string]string{"DB_PASSWORD": password}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sops-age"}, StringData: map[string]string{"key.agekey": id.String() + "\n"}},
	} {
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	gs := gitsynctest.New(ns, "app", "file://"+dir, func(g *gitsyncv1.GitSync) {
		g.Spec.Substitute = map[string]string{"ENV": "prod"}
		g.Spec.SubstituteFrom = []gitsyncv1.SubstituteReference{{Kind: "Secret", Name: "vars"}}
		g.Spec.Decryption = &gitsyncv1.DecryptionSpec{Provider: "sops", SecretRef: gitsyncv1.LocalObjectReference{Name: "sops-age"}}
	})
	poll(t, "create GitSync (CRD installed by the agent)", func(ctx context.Context) (bool, error) {
		return c.Create(ctx, gs.DeepCopy()) == nil, nil
	})
	waitApplied(t, c, client.ObjectKeyFromObject(gs), commit)

	r := gitsync(t, "build", "--gitsync", ns+"/app", "--kubeconfig", env.Kubeconfig, "-o", "json")
	wantCode(t, r, 0)
	for _, v := range []string{token, password} {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), base64.RawStdEncoding.EncodeToString([]byte(v))} {
			if strings.Contains(r.stdout+r.stderr, form) {
				t.Errorf("build --gitsync prints %q (of %q):\n%s", form, v, r)
			}
		}
	}
	built := builtObjects(t, r.stdout, outputJSON)
	var app *unstructured.Unstructured
	for _, obj := range built {
		if obj.GetKind() == "ConfigMap" && obj.GetName() == "app" {
			app = obj
		}
	}
	if app == nil {
		t.Fatalf("no ConfigMap app printed:\n%s", r.stdout)
	}
	if got, _, _ := unstructured.NestedStringMap(app.Object, "data"); got["env"] != "prod" || got["db"] != "***" {
		t.Errorf("ConfigMap app data = %v, want env=prod (spec.substitute) and db=*** (a Secret's variable)", got)
	}
	live := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, live); err != nil {
		t.Fatal(err)
	}
	if live.Data["env"] != "prod" || live.Data["db"] != password {
		t.Errorf("the agent applied data %v; build is compared against that", live.Data)
	}

	flag := gitsync(t, "build", "--gitsync", ns+"/app", "--kubeconfig", env.Kubeconfig, "-o", "json",
		"--substitute", "ENV=dev", "--substitute", "DB_PASSWORD=x")
	wantCode(t, flag, 0)
	for _, obj := range builtObjects(t, flag.stdout, outputJSON) {
		if obj.GetKind() == "ConfigMap" && obj.GetName() == "app" {
			if got, _, _ := unstructured.NestedString(obj.Object, "data", "env"); got != "dev" {
				t.Errorf("with --substitute ENV=dev: data.env = %q, want dev", got)
			}
		}
	}
}
