package oci

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Cosign signatures, key-based, as `cosign sign --key` stores them: a
// manifest tagged "sha256-<hex>.sig" in the artifact's repository whose
// layers are simple-signing payloads naming the signed manifest's digest,
// each with its signature in an annotation. Only this is read; a
// transparency log entry or certificate beside it is neither required nor
// trusted: the keys given are the trust.
const (
	cosignPayloadMediaType    = "application/vnd.dev.cosign.simplesigning.v1+json"
	cosignSignatureAnnotation = "dev.cosignproject.cosign/signature"
	cosignPayloadType         = "cosign container image signature"
	maxCosignSignatures       = 32
	maxCosignPayloadBytes     = 64 << 10
)

// ErrUnverified marks an artifact without a signature the keys verify:
// unsigned, signed by another key, or with a signature that does not match.
var ErrUnverified = errors.New("artifact not verified")

// Signer says which trusted key verified an artifact.
type Signer struct {
	// KeyID is "SHA256:<hex>" of the public key's PKIX encoding.
	KeyID string
}

// ParsePublicKeys reads every PEM "PUBLIC KEY" block of b (ECDSA, RSA or
// Ed25519, as `cosign generate-key-pair` and openssl write them).
func ParsePublicKeys(b []byte) ([]crypto.PublicKey, error) {
	var out []crypto.PublicKey
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "PUBLIC KEY" {
			continue
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("public key: %w", err)
		}
		switch k.(type) {
		case *ecdsa.PublicKey, *rsa.PublicKey, ed25519.PublicKey:
			out = append(out, k)
		default:
			return nil, fmt.Errorf("public key of type %T: want ECDSA, RSA or Ed25519", k)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM PUBLIC KEY block")
	}
	return out, nil
}

// SecretKeys reads the trusted keys of a Secret's data, as a GitSync's
// spec.source.verify (mode Cosign) names them: every key ending ".pub"
// holds one or more PEM public keys. Sum is a digest of what was read, so
// a verdict can be remembered per key set. from names the Secret in
// errors; key material never appears in one.
func SecretKeys(data map[string][]byte, from string) (keys []crypto.PublicKey, sum string, err error) {
	names := make([]string, 0, len(data))
	for k := range data {
		if strings.HasSuffix(k, ".pub") {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, "", fmt.Errorf("%s has no key ending .pub (a cosign public key)", from)
	}
	h := sha256.New()
	for _, k := range names {
		ks, err := ParsePublicKeys(data[k])
		if err != nil {
			return nil, "", fmt.Errorf("%s key %s: %w", from, k, err)
		}
		keys = append(keys, ks...)
		h.Write([]byte(k + "\x00"))
		h.Write(data[k])
		h.Write([]byte{0})
	}
	return keys, hex.EncodeToString(h.Sum(nil)), nil
}

// KeyID is "SHA256:<hex>" of k's PKIX encoding.
func KeyID(k crypto.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		return "unknown"
	}
	sum := sha256.Sum256(der)
	return "SHA256:" + hex.EncodeToString(sum[:])
}

// Verify checks that a key of keys signed the manifest rev.Digest of a with
// cosign, and says which. It reads the signature manifest and at most 32
// payloads of 64 KiB; an artifact without one is ErrUnverified, as is one
// whose every signature fails.
func (c *Client) Verify(ctx context.Context, a Artifact, rev Revision, keys []crypto.PublicKey) (Signer, error) {
	if len(keys) == 0 {
		return Signer{}, fmt.Errorf("verify %s: no public keys given", a.URL)
	}
	repo, err := a.repository(c.opts.PlainHTTP)
	if err != nil {
		return Signer{}, err
	}
	h, err := v1.NewHash(rev.Digest)
	if err != nil {
		return Signer{}, fmt.Errorf("digest %q: %w", rev.Digest, ErrInvalid)
	}
	sigTag := repo.Tag(h.Algorithm + "-" + h.Hex + ".sig")
	desc, err := c.puller.Get(ctx, sigTag)
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == 404 {
		return Signer{}, fmt.Errorf("%s@%s has no cosign signature (no tag %s): %w", a.URL, rev.Digest, sigTag.TagStr(), ErrUnverified)
	}
	if err != nil {
		return Signer{}, fmt.Errorf("%s@%s: signatures: %w", a.URL, rev.Digest, err)
	}
	if int64(len(desc.Manifest)) > c.opts.Limits.ManifestBytes {
		return Signer{}, fmt.Errorf("%s@%s: signature manifest of %d bytes: %w", a.URL, rev.Digest, len(desc.Manifest), ErrTooLarge)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return Signer{}, fmt.Errorf("%s@%s: signature manifest: %w", a.URL, rev.Digest, err)
	}
	var failures []string
	tried := 0
	for _, l := range m.Layers {
		if l.MediaType != cosignPayloadMediaType {
			continue
		}
		if tried++; tried > maxCosignSignatures {
			break
		}
		if l.Size > maxCosignPayloadBytes {
			failures = append(failures, fmt.Sprintf("payload %s of %d bytes", l.Digest, l.Size))
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(l.Annotations[cosignSignatureAnnotation])
		if err != nil || len(sig) == 0 {
			failures = append(failures, fmt.Sprintf("payload %s carries no signature", l.Digest))
			continue
		}
		payload, err := c.blob(ctx, a, l)
		if err != nil {
			return Signer{}, fmt.Errorf("%s@%s: signature payload: %w", a.URL, rev.Digest, err)
		}
		key, ok := verifiedBy(keys, payload, sig)
		if !ok {
			failures = append(failures, fmt.Sprintf("payload %s is signed by none of the %d keys", l.Digest, len(keys)))
			continue
		}
		if err := checkPayload(payload, rev.Digest); err != nil {
			failures = append(failures, fmt.Sprintf("payload %s: %v", l.Digest, err))
			continue
		}
		return Signer{KeyID: KeyID(key)}, nil
	}
	if len(failures) == 0 {
		failures = append(failures, "the signature manifest holds no cosign payload")
	}
	return Signer{}, fmt.Errorf("%s@%s: %s: %w", a.URL, rev.Digest, strings.Join(failures, "; "), ErrUnverified)
}

// blob reads the small blob l of a's repository, checking its digest.
func (c *Client) blob(ctx context.Context, a Artifact, l v1.Descriptor) ([]byte, error) {
	repo, err := a.repository(c.opts.PlainHTTP)
	if err != nil {
		return nil, err
	}
	layer, err := c.puller.Layer(ctx, repo.Digest(l.Digest.String()))
	if err != nil {
		return nil, err
	}
	rc, err := layer.Compressed() // as stored: the payload is not compressed
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(&cappedReader{r: rc, left: l.Size + 1})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// verifiedBy returns the key of keys whose signature over payload sig is.
func verifiedBy(keys []crypto.PublicKey, payload, sig []byte) (crypto.PublicKey, bool) {
	sum := sha256.Sum256(payload)
	for _, k := range keys {
		switch k := k.(type) {
		case *ecdsa.PublicKey:
			if ecdsa.VerifyASN1(k, sum[:], sig) {
				return k, true
			}
		case *rsa.PublicKey:
			if rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig) == nil || rsa.VerifyPSS(k, crypto.SHA256, sum[:], sig, nil) == nil {
				return k, true
			}
		case ed25519.PublicKey:
			if ed25519.Verify(k, payload, sig) {
				return k, true
			}
		}
	}
	return nil, false
}

// checkPayload checks that a verified simple-signing payload is a cosign
// signature of the manifest digest: a signature of another artifact,
// copied beside this one, verifies but names another digest.
func checkPayload(payload []byte, digest string) error {
	var p struct {
		Critical struct {
			Image struct {
				Digest string `json:"docker-manifest-digest"`
			} `json:"image"`
			Type string `json:"type"`
		} `json:"critical"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("not a simple-signing payload: %v", err)
	}
	if p.Critical.Type != cosignPayloadType {
		return fmt.Errorf("type %q, want %q", p.Critical.Type, cosignPayloadType)
	}
	if p.Critical.Image.Digest != digest {
		return fmt.Errorf("signs %s, not %s", p.Critical.Image.Digest, digest)
	}
	return nil
}
