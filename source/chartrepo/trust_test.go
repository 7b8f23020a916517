package chartrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gitsync.dev/gitsync/internal/chartrepotest"
	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/internal/ocitest"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/helm"
)

// provenanceTrust trusts key's public half for repo's provenance files.
func provenanceTrust(t *testing.T, repo string, key *gittest.SigningKey) chartrepo.Trust {
	t.Helper()
	tr, err := chartrepo.NewTrust(repo, chartrepo.VerifyProvenance, "Secret/ns/keys", map[string][]byte{"chart.asc": []byte(key.Public)})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestVerifyProvenance: a chart packaged with `helm package --sign` by a
// trusted key resolves and names its signer; the same chart unsigned, signed
// by another key, or whose provenance file was tampered with is an
// *UnverifiedError, as is one whose well-signed provenance file is another
// archive's; a verdict once given is not asked again; a repository
// no Trust covers is not verified at all.
func TestVerifyProvenance(t *testing.T) {
	chartrepotest.Helm(t)
	trusted := gittest.NewGPGKey(t, "Chart Signer <charts@example.com>")
	other := gittest.NewGPGKey(t, "Someone Else <else@example.com>")
	keyring, keyName := trusted.SecretKeyring(t, t.TempDir())
	otherRing, otherName := other.SecretKeyring(t, t.TempDir())

	web := chartrepotest.NewHTTPRepo(t)
	add := func(version, ring, name string) {
		dir := t.TempDir()
		chartrepotest.WriteTree(t, dir, chartrepotest.Leaf("web", version))
		if ring == "" {
			web.Add(t, dir)
			return
		}
		web.AddSigned(t, dir, ring, name)
	}
	add("1.0.0", keyring, keyName)
	add("1.1.0", "", "")
	add("1.2.0", otherRing, otherName)
	add("1.3.0", keyring, keyName)
	add("1.4.0", keyring, keyName)
	// 1.3.0's provenance file now claims another archive digest under the
	// signature made for its own.
	prov := filepath.Join(web.Dir, "charts", "web-1.3.0.tgz.prov")
	b, err := os.ReadFile(prov)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "sha256:")
	if i < 0 {
		t.Fatalf("no digest in %s:\n%s", prov, b)
	}
	tampered := []byte(string(b[:i+7]) + strings.Repeat("0", 64) + string(b[i+7+64:]))
	if err := os.WriteFile(prov, tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	// 1.4.0's provenance file is 1.0.0's: well signed, for another archive.
	signed, err := os.ReadFile(filepath.Join(web.Dir, "charts", "web-1.0.0.tgz.prov"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(web.Dir, "charts", "web-1.4.0.tgz.prov"), signed, 0o644); err != nil {
		t.Fatal(err)
	}

	f := newFetcher(t, nil)
	ctx := context.Background()
	acc := chartrepo.Access{Trust: []chartrepo.Trust{provenanceTrust(t, web.URL(), trusted)}}
	need := func(v string) []helm.Need {
		return []helm.Need{{Name: "web", Repository: web.URL(), Version: v, Locked: true}}
	}

	got, err := f.Resolve(ctx, need("1.0.0"), acc)
	if err != nil {
		t.Fatalf("a chart signed by the trusted key: %v", err)
	}
	signer, err := f.Verify(ctx, web.URL(), got[0], acc)
	if err != nil || !strings.Contains(signer, trusted.Fingerprint) || !strings.Contains(signer, "chart web 1.0.0") {
		t.Errorf("signer %q (%v), want chart web 1.0.0 by %s", signer, err, trusted.Fingerprint)
	}
	before := web.Requests()
	if _, err := f.Verify(ctx, web.URL(), got[0], acc); err != nil {
		t.Fatal(err)
	}
	if n := web.Requests() - before; n != 0 {
		t.Errorf("a verified chart verified again with %d requests, want 0", n)
	}

	for _, c := range []struct{ version, why string }{
		{"1.1.0", "no provenance file"},
		{"1.2.0", "not a trusted key"},
		{"1.3.0", "signature that does not verify"},
		{"1.4.0", "lists no archive of digest"},
	} {
		_, err := f.Resolve(ctx, need(c.version), acc)
		var ue *chartrepo.UnverifiedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("web %s: error %v, want an *UnverifiedError saying %q", c.version, err, c.why)
		}
	}

	// Another repository's Trust does not cover this one: nothing verified.
	elsewhere := chartrepo.Access{Trust: []chartrepo.Trust{provenanceTrust(t, web.URL()+"/other", trusted)}}
	if _, err := f.Resolve(ctx, need("1.1.0"), elsewhere); err != nil {
		t.Errorf("a chart of a repository no Trust covers: %v", err)
	}
}

// TestVerifyCosign: an OCI chart whose manifest carries a cosign signature
// by a trusted key resolves and names the key; an unsigned one, or one
// signed by another key, is an *UnverifiedError.
func TestVerifyCosign(t *testing.T) {
	chartrepotest.Helm(t)
	reg := chartrepotest.NewRegistry(t)
	signerDir, otherDir := t.TempDir(), t.TempDir()
	ocitest.Cosign(t, signerDir, "generate-key-pair")
	ocitest.Cosign(t, otherDir, "generate-key-pair")
	push := func(version, signWith string) {
		dir := t.TempDir()
		chartrepotest.WriteTree(t, dir, chartrepotest.Leaf("cache", version))
		digest := reg.Push(t, dir)
		if signWith != "" {
			ocitest.Sign(t, signWith, reg.Host()+"/charts/cache@"+digest)
		}
	}
	push("0.1.0", signerDir)
	push("0.2.0", "")
	push("0.3.0", otherDir)

	pub, err := os.ReadFile(filepath.Join(signerDir, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := chartrepo.NewTrust(reg.URL(), chartrepo.VerifyCosign, "Secret/ns/keys", map[string][]byte{"cosign.pub": pub})
	if err != nil {
		t.Fatal(err)
	}
	acc := chartrepo.Access{Trust: []chartrepo.Trust{tr}}
	f := newFetcher(t, nil)
	ctx := context.Background()
	need := func(v string) []helm.Need {
		return []helm.Need{{Name: "cache", Repository: reg.URL(), Version: v, Locked: true}}
	}
	got, err := f.Resolve(ctx, need("0.1.0"), acc)
	if err != nil {
		t.Fatalf("a chart signed by the trusted key: %v", err)
	}
	signer, err := f.Verify(ctx, reg.URL(), got[0], acc)
	if err != nil || !strings.Contains(signer, "cosign key SHA256:") {
		t.Errorf("signer %q (%v), want a cosign key", signer, err)
	}
	for _, c := range []struct{ version, why string }{
		{"0.2.0", "no cosign signature"},
		{"0.3.0", "signed by none of the 1 keys"},
	} {
		_, err := f.Resolve(ctx, need(c.version), acc)
		var ue *chartrepo.UnverifiedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("cache %s: error %v, want an *UnverifiedError saying %q", c.version, err, c.why)
		}
	}
}

// TestNewTrustRefusesTheWrongKind: cosign is for oci://, provenance for
// http(s)://, and a Secret without keys of the mode's kind is refused
// naming what it lacks.
func TestNewTrustRefusesTheWrongKind(t *testing.T) {
	for _, c := range []struct {
		name, repo, mode, want string
		data                   map[string][]byte
	}{
		{"cosign over http", "https://charts.example.com", chartrepo.VerifyCosign, "not one", map[string][]byte{"cosign.pub": nil}},
		{"provenance over oci", "oci://reg.example.com/charts", chartrepo.VerifyProvenance, "oci:// registry", map[string][]byte{"a.asc": nil}},
		{"no .asc key", "https://charts.example.com", chartrepo.VerifyProvenance, "no key ending .asc", map[string][]byte{"cosign.pub": []byte("x")}},
		{"no .pub key", "oci://reg.example.com/charts", chartrepo.VerifyCosign, "no key ending .pub", map[string][]byte{"a.asc": []byte("x")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := chartrepo.NewTrust(c.repo, c.mode, "Secret/ns/keys", c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}
