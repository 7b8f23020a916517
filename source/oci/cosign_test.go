package oci_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"gitsync.dev/gitsync/source/oci"
)

// These tests write signatures in cosign's layout with Go's crypto, to
// reach the refusals a real signer never produces (a payload naming another
// digest, a corrupted signature); cmd/gitsync signs with the cosign binary.

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func payloadFor(repo, digest string) []byte {
	return []byte(fmt.Sprintf(`{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`, repo, digest))
}

// sign stores, as cosign does, a signature manifest for digest in reg's
// repo holding one payload per (payload, signature) pair.
func sign(t *testing.T, reg *testRegistry, repo, digest string, layers ...[2][]byte) {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	for _, l := range layers {
		var err error
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:       static.NewLayer(l[0], "application/vnd.dev.cosign.simplesigning.v1+json"),
			MediaType:   "application/vnd.dev.cosign.simplesigning.v1+json",
			Annotations: map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(l[1])},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ref, err := name.ParseReference(reg.host + "/" + repo + ":" + strings.Replace(digest, ":", "-", 1) + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
}

func signature(t *testing.T, k *ecdsa.PrivateKey, payload []byte) []byte {
	t.Helper()
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, k, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func TestVerifyCosignLayout(t *testing.T) {
	ctx := context.Background()
	trusted, other := newKey(t), newKey(t)
	keys := []crypto.PublicKey{&trusted.PublicKey}

	cases := []struct {
		name string
		sign func(t *testing.T, reg *testRegistry, digest, otherDigest string)
		want string // "" verified
	}{
		{name: "signed", sign: func(t *testing.T, reg *testRegistry, d, _ string) {
			p := payloadFor(reg.host+"/app", d)
			sign(t, reg, "app", d, [2][]byte{p, signature(t, trusted, p)})
		}},
		{name: "second signature is the trusted one", sign: func(t *testing.T, reg *testRegistry, d, _ string) {
			p := payloadFor(reg.host+"/app", d)
			sign(t, reg, "app", d, [2][]byte{p, signature(t, other, p)}, [2][]byte{p, signature(t, trusted, p)})
		}},
		{name: "unsigned", sign: func(*testing.T, *testRegistry, string, string) {}, want: "has no cosign signature"},
		{name: "another key", sign: func(t *testing.T, reg *testRegistry, d, _ string) {
			p := payloadFor(reg.host+"/app", d)
			sign(t, reg, "app", d, [2][]byte{p, signature(t, other, p)})
		}, want: "signed by none of the 1 keys"},
		{name: "corrupted signature", sign: func(t *testing.T, reg *testRegistry, d, _ string) {
			p := payloadFor(reg.host+"/app", d)
			sig := signature(t, trusted, p)
			sig[len(sig)-1] ^= 1
			sign(t, reg, "app", d, [2][]byte{p, sig})
		}, want: "signed by none"},
		{name: "signature of another artifact copied beside it", sign: func(t *testing.T, reg *testRegistry, d, otherDigest string) {
			p := payloadFor(reg.host+"/app", otherDigest)
			sign(t, reg, "app", d, [2][]byte{p, signature(t, trusted, p)})
		}, want: "signs "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry(t)
			c := client()
			a := oci.Artifact{URL: reg.url("app"), Ref: oci.Ref{Tag: "v1"}}
			rev, err := c.Push(ctx, writeTree(t, map[string]string{"a.yaml": "kind: ConfigMap\n"}), a, oci.PushOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b := oci.Artifact{URL: reg.url("app"), Ref: oci.Ref{Tag: "v2"}}
			otherRev, err := c.Push(ctx, writeTree(t, map[string]string{"b.yaml": "kind: Secret\n"}), b, oci.PushOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.sign(t, reg, rev.Digest, otherRev.Digest)
			signer, err := c.Verify(ctx, a, rev, keys)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if signer.KeyID != oci.KeyID(&trusted.PublicKey) {
					t.Errorf("signer %s, want %s", signer.KeyID, oci.KeyID(&trusted.PublicKey))
				}
				return
			}
			if !errors.Is(err, oci.ErrUnverified) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrUnverified saying %q", err, tc.want)
			}
		})
	}
}

func TestParsePublicKeys(t *testing.T) {
	k := newKey(t)
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	keys, err := oci.ParsePublicKeys(append(append([]byte("comment\n"), b...), b...))
	if err != nil || len(keys) != 2 {
		t.Fatalf("ParsePublicKeys = %d keys, %v", len(keys), err)
	}
	if _, err := oci.ParsePublicKeys([]byte("-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n")); err == nil {
		t.Error("a private key block was taken for a public key")
	}
}
