package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/sops/sopstest"
)

const (
	sopsPassword = "pw-4f1a9c-plaintext"
	sopsToken    = "tok-77d2e0-plaintext"
)

// sopsFiles returns two encrypted Secrets for recipient, one with every
// value encrypted and one ("api") with its token encrypted and its mode in
// plain text (covered by the MAC all the same).
func sopsFiles(t *testing.T, id *age.X25519Identity) map[string]string {
	t.Helper()
	enc := func(plain, regex string) string {
		b, err := sopstest.Encrypt([]byte(plain), sopstest.Options{EncryptedRegex: regex}, id.Recipient())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return map[string]string{
		"deploy/secret.enc.yaml": enc("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\nstringData:\n  password: "+sopsPassword+"\n", "^(data|stringData)$"),
		"deploy/config.enc.yaml": enc("apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\nstringData:\n  token: "+sopsToken+"\n  mode: fast\n", "^token$"),
		"deploy/plain.yaml":      configMap("plain", "1"),
	}
}

func createAgeSecret(t *testing.T, c client.Client, ns string, id *age.X25519Identity) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-age", Namespace: ns},
		StringData: map[string]string{"age.agekey": "# test key\n" + id.String() + "\n"}}
	if err := c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// TestDecryption: SOPS-encrypted files are decrypted with the age key of
// spec.decryption and applied in plaintext; the plaintext never shows in
// the GitSync's status, the namespace's Events or the agent's log.
func TestDecryption(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	logs := &syncBuffer{}
	startAgent(t, agentOptions{namespace: ns, logger: zap.New(zap.UseDevMode(true), zap.WriteTo(logs))})
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	createAgeSecret(t, c, ns, id)
	r := newRepo(t)
	files := sopsFiles(t, id)
	r.commit(files)
	gs := newGitSync(ns, "app", r.url(), func(g *v1.GitSync) {
		g.Spec.Decryption = &v1.DecryptionSpec{Provider: "sops", SecretRef: v1.LocalObjectReference{Name: "sops-age"}}
	})
	ctx := context.Background()
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, nil)
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["password"]) != sopsPassword {
		t.Errorf("Secret db password is not the decrypted value")
	}
	api := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api"}, api); err != nil {
		t.Fatal(err)
	}
	if string(api.Data["token"]) != sopsToken || string(api.Data["mode"]) != "fast" {
		t.Errorf("Secret api holds %d keys, want the decrypted token and mode fast", len(api.Data))
	}
	for _, o := range []client.Object{secret, api} {
		if strings.Contains(o.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]+strings.Join(keys(o.GetAnnotations()), ","), "sops") {
			t.Errorf("%s carries sops metadata", o.GetName())
		}
	}
	assertNotShown(t, c, ns, logs, got, sopsPassword, sopsToken)
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// assertNotShown fails when any value appears in gs's conditions, the
// namespace's Events or the log.
func assertNotShown(t *testing.T, c client.Client, ns string, logs *syncBuffer, gs *v1.GitSync, values ...string) {
	t.Helper()
	var everything []string
	for _, cond := range gs.Status.Conditions {
		everything = append(everything, "condition "+cond.Type+": "+cond.Message)
	}
	evs := &corev1.EventList{}
	if err := c.List(context.Background(), evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		everything = append(everything, "Event "+e.Reason+": "+e.Message)
	}
	everything = append(everything, "agent log: "+logs.String())
	for _, v := range values {
		for _, msg := range everything {
			if strings.Contains(msg, v) {
				t.Errorf("a decrypted value leaked into %s", msg)
			}
		}
	}
}

// TestDecryptionFailures: an encrypted file is never applied encrypted:
// without spec.decryption, with a wrong key and with a tampered file the
// GitSync is Stalled DecryptionFailed naming the file, nothing of the
// revision is applied and nothing is pruned; the right key, written into
// the Secret, makes it Ready without waiting for the interval.
func TestDecryptionFailures(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	right, _ := age.GenerateX25519Identity()
	wrong, _ := age.GenerateX25519Identity()
	r := newRepo(t)
	r.commit(map[string]string{"deploy/old.yaml": configMap("old", "1")})
	gs := newGitSync(ns, "app", r.url())
	ctx := context.Background()
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)

	files := sopsFiles(t, right)
	files["deploy/old.yaml"] = "" // removed: pruned only if the revision applies
	r.commit(files)
	delete(files, "deploy/old.yaml")
	request(t, c, key, "1")
	waitReason(t, c, key, v1.ReasonDecryptionFailed, "deploy/", ".enc.yaml", "spec.decryption")

	createAgeSecret(t, c, ns, wrong)
	if err := c.Get(ctx, key, gs); err != nil {
		t.Fatal(err)
	}
	gs.Spec.Decryption = &v1.DecryptionSpec{Provider: "sops", SecretRef: v1.LocalObjectReference{Name: "sops-age"}}
	if err := c.Update(ctx, gs); err != nil {
		t.Fatal(err)
	}
	waitReason(t, c, key, v1.ReasonDecryptionFailed, "deploy/", "none of the 1 age identities matches", right.Recipient().String())
	if _, err := getCM(t, c, ns, "plain"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap plain: %v, want it not applied", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret api: %v, want it not applied", err)
	}
	if _, err := getCM(t, c, ns, "old"); err != nil {
		t.Errorf("ConfigMap old was pruned although the revision failed: %v", err)
	}

	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sops-age"}, s); err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{"age.agekey": []byte(right.String())}
	if err := c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)

	tampered := files["deploy/config.enc.yaml"]
	files["deploy/config.enc.yaml"] = strings.Replace(tampered, "mode: fast", "mode: slow", 1)
	r.commit(files)
	request(t, c, key, "2")
	waitReason(t, c, key, v1.ReasonDecryptionFailed, "deploy/config.enc.yaml", "MAC mismatch")
	api := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api"}, api); err != nil || string(api.Data["mode"]) != "fast" {
		t.Errorf("Secret api after a tampered revision: %v, want it unchanged", err)
	}
}

// TestDecryptionIntoConfigMapRefused is the attack: a kustomize patch with
// allowKindChange turns a SOPS-encrypted Secret into a ConfigMap, which
// every reader of ConfigMaps may read. The GitSync is Stalled
// DecryptionFailed naming the file, nothing of the revision is applied,
// and the plaintext shows nowhere.
//
// Checked: with sops.Objects not checking the kind (Object instead of
// object+checkSecret), ConfigMap db is applied holding the password.
func TestDecryptionIntoConfigMapRefused(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	logs := &syncBuffer{}
	startAgent(t, agentOptions{namespace: ns, logger: zap.New(zap.UseDevMode(true), zap.WriteTo(logs))})
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	createAgeSecret(t, c, ns, id)
	files := sopsFiles(t, id)
	r := newRepo(t)
	r.commit(map[string]string{
		"deploy/secret.enc.yaml": files["deploy/secret.enc.yaml"],
		"deploy/plain.yaml":      files["deploy/plain.yaml"],
		"deploy/kustomization.yaml": `resources: [secret.enc.yaml, plain.yaml]
patches:
- target: {kind: Secret, name: db}
  options: {allowKindChange: true}
  patch: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: db
`,
	})
	gs := newGitSync(ns, "app", r.url(), func(g *v1.GitSync) {
		g.Spec.Decryption = &v1.DecryptionSpec{Provider: "sops", SecretRef: v1.LocalObjectReference{Name: "sops-age"}}
	})
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	got := waitReason(t, c, client.ObjectKeyFromObject(gs), v1.ReasonDecryptionFailed, "deploy/secret.enc.yaml", "Secrets only", "ConfigMap")
	for _, name := range []string{"db", "plain"} {
		if _, err := getCM(t, c, ns, name); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s: %v, want nothing of the revision applied", name, err)
		}
	}
	assertNotShown(t, c, ns, logs, got, sopsPassword)
}

// TestDecryptionRefusesMACOnlyEncrypted is the attack: in a
// mac_only_encrypted file the MAC does not cover unencrypted values, so its
// kind can be edited by hand without breaking the MAC (shown with a file the
// sops CLI wrote, its ConfigMap kind edited). The agent refuses the file,
// Stalled DecryptionFailed naming the mode, and applies nothing of it.
//
// Checked: with the mac_only case of checkSecret removed, Secret nested is
// applied with the decrypted values.
func TestDecryptionRefusesMACOnlyEncrypted(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	real := filepath.Join("..", "source", "sops", "testdata", "realsops")
	data, err := os.ReadFile(filepath.Join(real, "nested-maconly.enc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(real, "test-only.agekey"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-age", Namespace: ns}, Data: map[string][]byte{"age.agekey": key}}
	if err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	r := newRepo(t)
	r.commit(map[string]string{"deploy/nested.enc.yaml": strings.Replace(string(data), "kind: ConfigMap", "kind: Secret", 1)})
	gs := newGitSync(ns, "app", r.url(), func(g *v1.GitSync) {
		g.Spec.Decryption = &v1.DecryptionSpec{Provider: "sops", SecretRef: v1.LocalObjectReference{Name: "sops-age"}}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	waitReason(t, c, client.ObjectKeyFromObject(gs), v1.ReasonDecryptionFailed, "deploy/nested.enc.yaml", "mac_only_encrypted")
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nested"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret nested: %v, want it not applied", err)
	}
}
