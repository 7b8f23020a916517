package controller_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/chartrepotest"
	"gitsync.dev/gitsync/internal/ocitest"
	"gitsync.dev/gitsync/source/oci"
)

// pushArtifact pushes files as the artifact url:tag (gitsync push
// artifact's layout) with basic credentials when user is set, and returns
// its digest.
func pushArtifact(t *testing.T, url, tag, user, password string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	chartrepotest.WriteTree(t, dir, files)
	opts := oci.Options{PlainHTTP: true}
	if user != "" {
		opts.Auth = &authn.Basic{Username: user, Password: password}
	}
	a, err := oci.ParseReference(url + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := oci.New(opts).Push(context.Background(), dir, a, oci.PushOptions{})
	if err != nil {
		t.Fatalf("push %s:%s: %v", url, tag, err)
	}
	return rev.Digest
}

// registryReads counts the requests of paths by what they read.
func registryReads(paths []string) (manifestHEADs, blobGETs, other int) {
	for _, p := range paths {
		switch {
		case strings.HasPrefix(p, "HEAD ") && strings.Contains(p, "/manifests/"):
			manifestHEADs++
		case strings.HasPrefix(p, "GET ") && strings.Contains(p, "/blobs/"):
			blobGETs++
		default:
			other++
		}
	}
	return
}

// TestOCIArtifactSource: a GitSync of an oci:// artifact whose registry
// wants credentials (read from a Secret through the tenant boundary)
// converges with the digest as its revision; while the tag stays, each
// poll is one manifest HEAD, no blob is read and no API request is sent;
// a new push to the tag is applied (and what left it pruned); a tag that
// does not exist is RefNotFound and keeps the last good state.
//
// A second GitSync of the same plain path under another name and target
// namespace shares the render (0 blob reads).
//
// Checked: with GetPulled's lookup of kept renders removed, each poll
// pulls the layer again and the blob count fails; with the Helm settings
// always in the key (before pulledKey), the twin pulls 1 blob.
func TestOCIArtifactSource(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	logs := &syncBuffer{}
	a := startAgent(t, agentOptions{namespace: ns, logger: zap.New(zap.UseDevMode(true), zap.WriteTo(logs))})
	reg := chartrepotest.NewRegistry(t)
	reg.RequireAuth("ci", "s3cret-registry-pw")
	url := "oci://" + reg.Host() + "/apps/web"
	first := pushArtifact(t, url, "stable", "ci", "s3cret-registry-pw", map[string]string{
		"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": configMap("b", "1"), "other/c.yaml": configMap("c", "1"),
	})
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry", Namespace: ns},
		StringData: map[string]string{"username": "ci", "password": "s3cret-registry-pw"}}); err != nil {
		t.Fatal(err)
	}
	gs := newGitSync(ns, "web", url, func(g *v1.GitSync) {
		g.Spec.Source.Ref = v1.GitRef{Tag: "stable"}
		g.Spec.Source.SecretRef = &v1.LocalObjectReference{Name: "registry"}
		g.Spec.Interval = metav1.Duration{Duration: time.Second}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if want := "stable@" + first; got.Status.LastAppliedRevision != want {
		t.Fatalf("applied %q, want %q", got.Status.LastAppliedRevision, want)
	}
	for _, name := range []string{"a", "b"} {
		if cm, err := getCM(t, c, ns, name); err != nil || cm.Data["value"] != "1" {
			t.Fatalf("ConfigMap %s: %v %v", name, cm.Data, err)
		}
	}
	if _, err := getCM(t, c, ns, "c"); err == nil {
		t.Error("ConfigMap c outside spec.source.path was applied")
	}

	// Converged: polls cost one manifest HEAD each, nothing else.
	a.settle(t, c, key, 1)
	a.waitFetches(t, "success", 1)
	reads, writes, seen := a.count.reads.Load(), a.count.writes.Load(), len(a.count.requests())
	before := len(reg.Paths())
	a.waitFetches(t, "success", 3)
	after := reg.Paths()[before:]
	heads, blobs, other := registryReads(after)
	if blobs != 0 || other != 0 || heads == 0 {
		t.Errorf("polls of an unchanged tag sent %d manifest HEADs, %d blob GETs, %d others: %v; want HEADs only", heads, blobs, other, after)
	}
	if r, w := a.count.reads.Load()-reads, a.count.writes.Load()-writes; r != 0 || w != 0 {
		t.Errorf("polls of a converged artifact sent %d API reads and %d writes, want none: %v", r, w, a.count.requests()[seen:])
	}

	// Another GitSync of the same plain path, under another name and
	// target namespace, shares the kept render: nothing is pulled again.
	target := env.Namespace(t)
	before = len(reg.Paths())
	twin := newGitSync(ns, "web-twin", url, func(g *v1.GitSync) {
		g.Spec.Source.Ref = v1.GitRef{Tag: "stable"}
		g.Spec.Source.SecretRef = &v1.LocalObjectReference{Name: "registry"}
		g.Spec.TargetNamespace = target
	})
	if err := c.Create(ctx, twin); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(twin), v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return g.Status.LastAppliedRevision == "stable@"+first
	})
	if _, blobs, _ := registryReads(reg.Paths()[before:]); blobs != 0 {
		t.Errorf("a second GitSync of the same artifact and plain path pulled %d blobs, want 0 (one render shared): %v", blobs, reg.Paths()[before:])
	}
	if cm, err := getCM(t, c, target, "a"); err != nil || cm.Data["value"] != "1" {
		t.Errorf("the twin's ConfigMap a in %s: %v %v", target, cm.Data, err)
	}

	// A new push to the tag is applied; b left it and is pruned.
	second := pushArtifact(t, url, "stable", "ci", "s3cret-registry-pw", map[string]string{"deploy/a.yaml": configMap("a", "2")})
	got = waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return g.Status.LastAppliedRevision == "stable@"+second
	})
	if cm, err := getCM(t, c, ns, "a"); err != nil || cm.Data["value"] != "2" {
		t.Errorf("ConfigMap a after the push: %v %v, want value 2", cm.Data, err)
	}
	eventually(t, "ConfigMap b pruned", func(ctx context.Context) (bool, error) {
		_, err := getCM(t, c, ns, "b")
		return err != nil, nil
	})

	// A tag that is not there: RefNotFound, the last good state kept.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Source.Ref = v1.GitRef{Tag: "missing"}
	if err := c.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitReason(t, c, key, v1.ReasonRefNotFound, "missing")
	if got.Status.LastAppliedRevision != "stable@"+second {
		t.Errorf("after a missing tag the status says %s applied, want stable@%s kept", got.Status.LastAppliedRevision, second)
	}
	if cm, err := getCM(t, c, ns, "a"); err != nil || cm.Data["value"] != "2" {
		t.Errorf("ConfigMap a after a missing tag: %v %v, want value 2 kept", cm.Data, err)
	}
	assertNotShown(t, c, ns, logs, got, "s3cret-registry-pw")
}

// TestOCIArtifactDigestNeedsItsOwnCredentials: a GitSync naming by digest
// an artifact that another GitSync pulled with credentials does not get
// the render kept for it (same namespace and Helm release name, so the same
// render key): without
// credentials of its own the registry refuses it (AuthenticationRequired)
// and nothing is applied.
//
// Checked: without artifactRevision's Reachable, the second GitSync
// applies the private artifact's ConfigMap.
func TestOCIArtifactDigestNeedsItsOwnCredentials(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	reg := chartrepotest.NewRegistry(t)
	reg.RequireAuth("ci", "private-pw")
	url := "oci://" + reg.Host() + "/apps/private"
	digest := pushArtifact(t, url, "v1", "ci", "private-pw", map[string]string{"deploy/a.yaml": configMap("a", "private")})
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry", Namespace: ns},
		StringData: map[string]string{"username": "ci", "password": "private-pw"}}); err != nil {
		t.Fatal(err)
	}
	byDigest := func(g *v1.GitSync) { g.Spec.Source.Ref = v1.GitRef{Digest: digest} }
	owner := newGitSync(ns, "owner", url, byDigest, func(g *v1.GitSync) {
		g.Spec.Source.SecretRef = &v1.LocalObjectReference{Name: "registry"}
	})
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(owner), v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return g.Status.LastAppliedRevision == digest
	})
	// The same release name and namespace make the same render key.
	thief := newGitSync(ns, "thief", url, byDigest, func(g *v1.GitSync) { g.Spec.Helm = &v1.HelmSpec{ReleaseName: "owner"} })
	if err := c.Create(ctx, thief); err != nil {
		t.Fatal(err)
	}
	waitReason(t, c, client.ObjectKeyFromObject(thief), v1.ReasonAuthenticationRequired, "spec.source.secretRef")
	if cm, err := getCM(t, c, ns, "a"); err != nil || cm.Labels["gitsync.dev/name"] != "owner" {
		t.Errorf("ConfigMap a: %v, labels %v; want it the owner's alone", err, cm.Labels)
	}
}

// TestOCIArtifactCosign: with spec.source.verify mode Cosign, an artifact
// signed by real cosign with a key of the Secret is applied and its signer
// shown; an unsigned push to the tag, and one signed by another key, are
// Stalled VerificationFailed with nothing applied or pruned; the verdict
// is remembered, so polls of the verified digest read no signature again.
//
// Checked: with artifactVerified returning "" before it verifies, the test
// fails at once: the artifact is applied with no signer shown.
func TestOCIArtifactCosign(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	reg := chartrepotest.NewRegistry(t)
	url := "oci://" + reg.Host() + "/apps/signed"
	keys, other := t.TempDir(), t.TempDir()
	ocitest.Cosign(t, keys, "generate-key-pair")
	ocitest.Cosign(t, other, "generate-key-pair")
	sign := func(dir, digest string) { t.Helper(); ocitest.Sign(t, dir, reg.Host()+"/apps/signed@"+digest) }
	signed := pushArtifact(t, url, "v1", "", "", map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": configMap("b", "1")})
	sign(keys, signed)
	pub, err := os.ReadFile(filepath.Join(keys, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cosign", Namespace: ns},
		Data: map[string][]byte{"cosign.pub": pub}}); err != nil {
		t.Fatal(err)
	}
	gs := newGitSync(ns, "signed", url, func(g *v1.GitSync) {
		g.Spec.Source.Ref = v1.GitRef{Tag: "v1"}
		g.Spec.Source.Verify = &v1.GitVerification{Mode: v1.VerifyCosign, SecretRef: v1.LocalObjectReference{Name: "cosign"}}
		g.Spec.Interval = metav1.Duration{Duration: time.Second}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if got.Status.LastAppliedRevision != "v1@"+signed || !strings.HasPrefix(got.Status.LastAppliedSigner, "cosign key SHA256:") {
		t.Fatalf("applied %q signed by %q, want v1@%s by a cosign key", got.Status.LastAppliedRevision, got.Status.LastAppliedSigner, signed)
	}
	applied := got.Status

	a.settle(t, c, key, 1)
	a.waitFetches(t, "success", 1)
	before := len(reg.Paths())
	a.waitFetches(t, "success", 2)
	if heads, blobs, others := registryReads(reg.Paths()[before:]); blobs != 0 || others != 0 {
		t.Errorf("polls of a verified digest sent %d HEADs, %d blob GETs, %d others; want no signature read again", heads, blobs, others)
	}

	refused := func(step, digest string, words ...string) {
		t.Helper()
		got := waitReason(t, c, key, v1.ReasonVerificationFailed, append([]string{digest}, words...)...)
		if s := got.Status; s.LastAppliedRevision != applied.LastAppliedRevision || s.LastAppliedSigner != applied.LastAppliedSigner {
			t.Errorf("%s: status applied %s by %q, want %s by %q kept", step, s.LastAppliedRevision, s.LastAppliedSigner,
				applied.LastAppliedRevision, applied.LastAppliedSigner)
		}
		if cm, err := getCM(t, c, ns, "a"); err != nil || cm.Data["value"] != "1" {
			t.Errorf("%s: ConfigMap a %v %v, want value 1 kept", step, cm.Data, err)
		}
		if _, err := getCM(t, c, ns, "b"); err != nil {
			t.Errorf("%s: ConfigMap b: %v, want it kept (nothing pruned)", step, err)
		}
	}
	change := map[string]string{"deploy/a.yaml": configMap("a", "2")}
	unsigned := pushArtifact(t, url, "v1", "", "", change)
	refused("unsigned", unsigned, "has no cosign signature")

	change["deploy/a.yaml"] = configMap("a", "3")
	byOther := pushArtifact(t, url, "v1", "", "", change)
	sign(other, byOther)
	refused("signed by another key", byOther, "signed by none of the 1 keys")

	// Trusting the other key applies the waiting digest.
	otherPub, err := os.ReadFile(filepath.Join(other, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cosign"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data["other.pub"] = otherPub
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return g.Status.LastAppliedRevision == "v1@"+byOther
	})
	eventually(t, "ConfigMap b pruned", func(ctx context.Context) (bool, error) {
		_, err := getCM(t, c, ns, "b")
		return err != nil, nil
	})
}

// TestOCIArtifactEgress: an oci:// URL naming a loopback registry is
// refused by an agent whose egress policy denies loopback, before any
// request reaches it, as Stalled InvalidSpec naming the address.
func TestOCIArtifactEgress(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns, strictEgress: true, allowNetworks: []netip.Prefix{}})
	reg := chartrepotest.NewRegistry(t)
	url := "oci://" + reg.Host() + "/apps/web"
	pushArtifact(t, url, "v1", "", "", map[string]string{"deploy/a.yaml": configMap("a", "1")})
	before := reg.Requests()
	gs := newGitSync(ns, "web", url, func(g *v1.GitSync) { g.Spec.Source.Ref = v1.GitRef{Tag: "v1"} })
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	waitReason(t, c, client.ObjectKeyFromObject(gs), v1.ReasonInvalidSpec, "127.0.0.1")
	if n := reg.Requests() - before; n != 0 {
		t.Errorf("the registry got %d requests from an agent that may not dial loopback, want 0", n)
	}
}
