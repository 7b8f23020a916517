package controller_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
)

// TestVerifiedSource: with spec.source.verify a commit signed by a trusted
// OpenPGP key (real git and gpg) is applied and its signer shown in
// status; an unsigned commit, a signed one whose message was changed after
// signing, and one signed by an SSH key the Secret does not trust are
// Stalled VerificationFailed, naming the revision: nothing of them is
// applied, the file they removed is not pruned, and the last applied
// revision, signer and inventory stay. Trusting the SSH key in the Secret
// applies the waiting commit without a request (the Secret's watch
// requeues the GitSync).
//
// Checked: with sync's verified step removed, the unsigned commit is
// applied (ConfigMap a becomes 2, b is pruned) and the test fails there.
func TestVerifiedSource(t *testing.T) {
	alice := gittest.NewGPGKey(t, "Alice <alice@example.com>")
	eve := gittest.NewSSHKey(t, "eve@example.com")
	c := setup(t)
	ns := env.Namespace(t)
	r := newRepo(t)
	root, name := filepath.Split(r.dir)
	srv := gittest.New(t, root, gittest.Options{})
	startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "trusted", Namespace: ns},
		StringData: map[string]string{"alice.asc": alice.Public}}
	if err := c.Create(ctx, keys); err != nil {
		t.Fatal(err)
	}
	signed := r.CommitSigned("signed", map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": configMap("b", "1")}, alice)
	gs := newGitSync(ns, "app", srv.URL+"/"+name, func(g *v1.GitSync) {
		g.Spec.Source.Verify = &v1.GitVerification{SecretRef: v1.LocalObjectReference{Name: "trusted"}}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	wantSigner := `commit: OpenPGP ` + alice.Fingerprint + ` "Alice <alice@example.com>"`
	if got.Status.LastAppliedSigner != wantSigner || !strings.Contains(got.Status.LastAppliedRevision, signed) {
		t.Fatalf("applied %s signed by %q, want %s signed by %q", got.Status.LastAppliedRevision, got.Status.LastAppliedSigner, signed, wantSigner)
	}
	applied := got.Status

	refused := func(step, commit string, words ...string) {
		t.Helper()
		request(t, c, key, step)
		got := waitReason(t, c, key, v1.ReasonVerificationFailed, append([]string{"sha1:" + commit}, words...)...)
		if s := got.Status; s.LastAppliedRevision != applied.LastAppliedRevision || s.LastAppliedSigner != applied.LastAppliedSigner ||
			len(s.Inventory.Entries) != len(applied.Inventory.Entries) {
			t.Errorf("%s: status applied %s by %q with %d objects, want %s by %q with %d kept", step,
				s.LastAppliedRevision, s.LastAppliedSigner, len(s.Inventory.Entries),
				applied.LastAppliedRevision, applied.LastAppliedSigner, len(applied.Inventory.Entries))
		}
		if cm, err := getCM(t, c, ns, "a"); err != nil || cm.Data["value"] != "1" {
			t.Errorf("%s: ConfigMap a %v %v, want value 1 kept", step, cm.Data, err)
		}
		if _, err := getCM(t, c, ns, "b"); err != nil {
			t.Errorf("%s: ConfigMap b: %v, want it kept (nothing pruned)", step, err)
		}
	}
	change := map[string]string{"deploy/a.yaml": configMap("a", "2"), "deploy/b.yaml": ""}
	refused("unsigned", r.Commit("unsigned", change), "commit is not signed", "Secret/"+ns+"/trusted")

	r.CommitSigned("signed, then changed", nil, alice)
	tampered := r.Rewrite(func(raw string) string {
		return strings.Replace(raw, "signed, then changed", "changed after signing", 1)
	})
	refused("tampered", tampered, "OpenPGP signature that does not verify")

	byEve := r.CommitSigned("signed by eve", map[string]string{"deploy/a.yaml": configMap("a", "3")}, eve)
	refused("untrusted", byEve, "signed by SSH key "+eve.Fingerprint, "not a trusted key")

	if err := c.Get(ctx, client.ObjectKeyFromObject(keys), keys); err != nil {
		t.Fatal(err)
	}
	keys.Data["eve.pub"] = []byte(eve.Public + "\n")
	if err := c.Update(ctx, keys); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, byEve)
	})
	if want := `commit: SSH ` + eve.Fingerprint + ` "eve@example.com"`; got.Status.LastAppliedSigner != want {
		t.Errorf("signer %q, want %q", got.Status.LastAppliedSigner, want)
	}
	if cm, err := getCM(t, c, ns, "a"); err != nil || cm.Data["value"] != "3" {
		t.Errorf("ConfigMap a %v %v, want value 3 applied", cm.Data, err)
	}
	if _, err := getCM(t, c, ns, "b"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap b: %v, want it pruned once a verified revision removed it", err)
	}
}

// TestConvergedVerifiedSendsNothing: a converged GitSync with
// spec.source.verify polls its remote at every interval and verifies the
// unchanged revision from memory: no API request (the keys Secret is read
// from its watch) and no fetch from the Git server (only its ls-remote).
//
// Checked: with verified reading the keys Secret with the agent's API
// reader instead of the tenant view, each poll sends a GET of it and the
// test fails naming them. (The Verifier's memory saves parsing the keys and
// checking the signature again; the objects are local either way, so no
// request count shows it: source/verify's TestMemo does.)
func TestConvergedVerifiedSendsNothing(t *testing.T) {
	bob := gittest.NewSSHKey(t, "bob@example.com")
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	root, name := filepath.Split(r.dir)
	srv := gittest.New(t, root, gittest.Options{})
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "trusted", Namespace: ns},
		StringData: map[string]string{"bob.pub": bob.Public}}); err != nil {
		t.Fatal(err)
	}
	commit := r.CommitSigned("signed", map[string]string{"deploy/a.yaml": configMap("a", "1")}, bob)
	gs := newGitSync(ns, "app", srv.URL+"/"+name, func(g *v1.GitSync) {
		g.Spec.Source.Verify = &v1.GitVerification{SecretRef: v1.LocalObjectReference{Name: "trusted"}}
		g.Spec.Interval = metav1.Duration{Duration: time.Second}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commit) && g.Status.LastAppliedSigner != ""
	})
	a.settle(t, c, key, 1)
	a.waitFetches(t, "success", 2)

	reads, writes, seen := a.count.reads.Load(), a.count.writes.Load(), len(a.count.requests())
	packs := srv.UploadPack.Load()
	a.waitFetches(t, "success", 3)
	if r, w := a.count.reads.Load()-reads, a.count.writes.Load()-writes; r != 0 || w != 0 {
		t.Errorf("3 polls of a converged verified GitSync sent %d reads and %d writes, want none: %v", r, w, a.count.requests()[seen:])
	}
	if n := srv.UploadPack.Load() - packs; n != 0 {
		t.Errorf("3 polls of an unchanged verified revision fetched %d times, want 0", n)
	}
}
