package chartrepo

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/oci"
	"gitsync.dev/gitsync/source/verify"
)

// Ways a chart's signature is checked.
const (
	// VerifyCosign checks a cosign signature on an OCI chart's manifest
	// against PEM public keys (data keys ending ".pub").
	VerifyCosign = "Cosign"
	// VerifyProvenance checks an HTTP repository chart's Helm provenance
	// file (the archive's URL + ".prov", `helm package --sign`) against
	// OpenPGP public keys (data keys ending ".asc").
	VerifyProvenance = "Provenance"
)

// Trust is the keys every chart of one repository must be signed with.
type Trust struct {
	// URL is the repository: an http(s):// repository is matched exactly
	// (a trailing slash aside), an oci:// one as a path prefix (charts of
	// oci://reg/org are those under reg/org/).
	URL string
	// Mode is VerifyCosign (oci://) or VerifyProvenance (http(s)://).
	Mode string
	// Origin names the keys' Secret and field in messages.
	Origin string
	// Sum names the keys' bytes, so a verdict is remembered per key set and
	// a changed Secret verifies again.
	Sum string

	cosign  []crypto.PublicKey
	openpgp *verify.Keys
}

// NewTrust reads the keys of a Secret's data for repo in mode: for
// VerifyCosign the PEM public keys of every data key ending ".pub", for
// VerifyProvenance the armored OpenPGP keys of every data key ending
// ".asc". origin names the Secret in messages; no key material is ever in
// one.
func NewTrust(repo, mode, origin string, data map[string][]byte) (Trust, error) {
	t := Trust{URL: strings.TrimSuffix(repo, "/"), Mode: mode, Origin: origin}
	_, isOCI := ociHost(repo)
	switch mode {
	case VerifyCosign:
		if !isOCI {
			return t, fmt.Errorf("%s: cosign verifies charts of an oci:// registry, and %s is not one (an http(s):// repository verifies with Provenance)", origin, stripUserinfo(repo))
		}
		keys, sum, err := oci.SecretKeys(data, origin)
		if err != nil {
			return t, err
		}
		t.cosign, t.Sum = keys, sum
	case VerifyProvenance:
		if isOCI {
			return t, fmt.Errorf("%s: Helm provenance files are read from an http(s):// repository, and %s is an oci:// registry (verify its charts with Cosign)", origin, stripUserinfo(repo))
		}
		pgp := map[string][]byte{}
		for k, v := range data {
			if strings.HasSuffix(k, verify.SuffixOpenPGP) {
				pgp[k] = v
			}
		}
		if len(pgp) == 0 {
			return t, fmt.Errorf("%s has no key ending %s (an armored OpenPGP public key, as `gpg --export --armor` writes it)", origin, verify.SuffixOpenPGP)
		}
		keys, err := verify.ParseKeys(origin, pgp)
		if err != nil {
			return t, err
		}
		t.openpgp, t.Sum = keys, verify.Digest(pgp)
	default:
		return t, fmt.Errorf("%s: verification mode %q is not Cosign or Provenance", origin, mode)
	}
	return t, nil
}

// covers reports whether t applies to charts of repo.
func (t Trust) covers(repo string) bool {
	repo = strings.TrimSuffix(repo, "/")
	if _, ok := ociHost(t.URL); ok {
		return repo == t.URL || strings.HasPrefix(repo, t.URL+"/")
	}
	return repo == t.URL
}

// UnverifiedError is a chart whose signature the trusted keys do not
// verify: unsigned, signed by another key, or signing another archive.
// Only a new chart version, spec or Secret fixes it.
type UnverifiedError struct {
	// Chart and Version name the chart; Repository is where it was read.
	Chart, Version, Repository string
	// Why says what failed, naming keys by fingerprint only.
	Why string
}

func (e *UnverifiedError) Error() string {
	return fmt.Sprintf("chart %s %s from %s failed verification: %s", e.Chart, e.Version, e.Repository, e.Why)
}

// Verify checks archive a, read from repo, against every Trust of acc that
// covers repo, and names its signers ("" when acc trusts nothing for repo:
// nothing is asked of it). A verdict is remembered per (archive, keys),
// so a chart verified once costs no request again; a refusal is an
// *UnverifiedError and is not remembered.
func (f *Fetcher) Verify(ctx context.Context, repo string, a helm.Archive, acc Access) (string, error) {
	if alias, ok := helm.RepositoryAlias(repo); ok {
		url, known := acc.Aliases[alias]
		if !known {
			return "", &AliasError{Chart: a.Name, Repository: repo, Name: alias}
		}
		repo = url
	}
	repo = strings.TrimSuffix(repo, "/")
	var signers []string
	for _, t := range acc.Trust {
		if !t.covers(repo) {
			continue
		}
		memo := t.Mode + "\x00" + repo + "\x00" + a.Digest + "\x00" + t.Sum
		if s, ok := f.verdicts.Get(memo); ok {
			signers = append(signers, s.(string))
			continue
		}
		var s string
		var err error
		if t.Mode == VerifyCosign {
			s, err = f.verifyCosign(ctx, repo, a, acc, t)
		} else {
			s, err = f.verifyProvenance(ctx, repo, a, acc, t)
		}
		if err != nil {
			return "", err
		}
		f.verdicts.Add(memo, s)
		signers = append(signers, s)
	}
	return strings.Join(signers, "; "), nil
}

// verifyProvenance reads the provenance file beside a's archive URL and
// checks it with t's OpenPGP keys.
func (f *Fetcher) verifyProvenance(ctx context.Context, repo string, a helm.Archive, acc Access, t Trust) (string, error) {
	object := "chart " + a.Name + " " + a.Version
	if a.Origin == "" {
		return "", fmt.Errorf("%s: where its archive was read is not known, so its provenance file cannot be found", object)
	}
	prov, err := f.get(ctx, repo, a.Origin+".prov", acc, verify.MaxProvenanceBytes, object+" provenance file")
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && se.Status == http.StatusNotFound {
			return "", &UnverifiedError{Chart: a.Name, Version: a.Version, Repository: repo,
				Why: "it has no provenance file (" + stripUserinfo(a.Origin) + ".prov); sign it with `helm package --sign`"}
		}
		return "", err
	}
	s, err := t.openpgp.VerifyProvenance(object, prov, a.Digest)
	var ve *verify.Error
	if errors.As(err, &ve) {
		return "", &UnverifiedError{Chart: a.Name, Version: a.Version, Repository: repo, Why: ve.Why + " (keys of " + t.Origin + ")"}
	}
	if err != nil {
		return "", err
	}
	return s.String(), nil
}

// verifyCosign checks the cosign signature on the manifest a was read
// from with t's public keys.
func (f *Fetcher) verifyCosign(ctx context.Context, repo string, a helm.Archive, acc Access, t Trust) (string, error) {
	ref, err := name.NewDigest(a.Origin)
	if err != nil {
		return "", fmt.Errorf("chart %s %s: the manifest it was read from is not known, so its signature cannot be found", a.Name, a.Version)
	}
	c := oci.New(oci.Options{Transport: f.client.Transport, PlainLoopback: true, Auth: registryAuth(repo, acc), UserAgent: "gitsync"})
	art := oci.Artifact{URL: oci.Scheme + ref.Context().Name()}
	signer, err := c.Verify(ctx, art, oci.Revision{Digest: ref.DigestStr()}, t.cosign)
	if err != nil {
		if errors.Is(err, oci.ErrUnverified) {
			return "", &UnverifiedError{Chart: a.Name, Version: a.Version, Repository: repo, Why: err.Error() + " (keys of " + t.Origin + ")"}
		}
		return "", f.ociErr(repo, acc, err)
	}
	return "chart " + a.Name + " " + a.Version + ": cosign key " + signer.KeyID, nil
}
