package prepare_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"testing"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/prepare"
)

// testCosignKey is a new P-256 public key in PEM (cosign generate-key-pair's
// kind).
func testCosignKey(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// TestChartAccessReadsVerifyKeys: a repository entry's verify Secret is
// read through the caller's reader, under the field that names it, and
// becomes a Trust of the repository; a Secret that cannot be read is a
// *ReadError naming that field.
func TestChartAccessReadsVerifyKeys(t *testing.T) {
	gs := &v1.GitSync{}
	gs.Namespace = "team"
	gs.Spec.Helm = &v1.HelmSpec{Repositories: []v1.HelmRepository{
		{URL: "oci://ghcr.io/org", Verify: &v1.ChartVerification{Mode: v1.VerifyCosign, SecretRef: v1.LocalObjectReference{Name: "cosign"}}},
	}}
	pub := testCosignKey(t)
	var fields []string
	read := func(ctx context.Context, name, field string) (map[string][]byte, error) {
		fields = append(fields, name+" "+field)
		if name != "cosign" {
			return nil, errors.New("not found")
		}
		return map[string][]byte{"cosign.pub": pub}, nil
	}
	acc, err := prepare.ChartAccess(context.Background(), gs, read)
	if err != nil {
		t.Fatal(err)
	}
	if len(acc.Trust) != 1 || acc.Trust[0].URL != "oci://ghcr.io/org" || acc.Trust[0].Mode != "Cosign" {
		t.Errorf("trust %+v, want one Cosign trust of oci://ghcr.io/org", acc.Trust)
	}
	if want := []string{"cosign spec.helm.repositories[0].verify.secretRef"}; !slices.Equal(fields, want) {
		t.Errorf("read %v, want %v", fields, want)
	}

	gs.Spec.Helm.Repositories[0].Verify.SecretRef.Name = "missing"
	_, err = prepare.ChartAccess(context.Background(), gs, read)
	var re *prepare.ReadError
	if !errors.As(err, &re) || re.Field != "spec.helm.repositories[0].verify.secretRef" {
		t.Errorf("error %v, want a *ReadError naming the verify field", err)
	}
}
