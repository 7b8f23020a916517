package verify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Kinds of signature, as Signer.Kind says them.
const (
	KindOpenPGP = "OpenPGP"
	KindSSH     = "SSH"
)

const (
	beginPGP = "-----BEGIN PGP SIGNATURE-----"
	beginSSH = "-----BEGIN SSH SIGNATURE-----"
)

// Signer is who signed one object of a revision.
type Signer struct {
	// Object is "commit" or "tag NAME".
	Object string
	// Kind is KindOpenPGP or KindSSH.
	Kind string
	// Fingerprint is the OpenPGP primary key's fingerprint (upper-case
	// hex) or the SSH key's SHA256 fingerprint.
	Fingerprint string
	// Identity is the key's primary OpenPGP user ID, or the SSH key's
	// principals (allowed_signers) or comment.
	Identity string
}

// String is `commit: OpenPGP 0A1B… "Alice <alice@example.com>"`.
func (s Signer) String() string {
	out := fmt.Sprintf("%s: %s %s", s.Object, s.Kind, s.Fingerprint)
	if s.Identity != "" {
		out += fmt.Sprintf(" %q", s.Identity)
	}
	return out
}

// verifyCommit checks c's signature against k.
func (k *Keys) verifyCommit(c *object.Commit) (Signer, error) {
	payload := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(payload); err != nil {
		return Signer{}, err
	}
	return k.verify("commit", c.PGPSignature, payload, c.Committer.When)
}

// verifyTag checks t's signature against k.
func (k *Keys) verifyTag(t *object.Tag) (Signer, error) {
	payload := &plumbing.MemoryObject{}
	if err := t.EncodeWithoutSignature(payload); err != nil {
		return Signer{}, err
	}
	return k.verify("tag "+t.Name, t.PGPSignature, payload, t.Tagger.When)
}

// verify checks that sig is one signature, by a key of k, over payload;
// when is the signing time the object claims (for SSH validity bounds).
// A refusal is a *refusal saying why.
func (k *Keys) verify(obj, sig string, payload *plumbing.MemoryObject, when time.Time) (Signer, error) {
	s := Signer{Object: obj}
	sig = strings.TrimSpace(sig)
	if sig == "" {
		return s, refuse("%s is not signed", obj)
	}
	if strings.Count(sig, "-----BEGIN ") > 1 {
		return s, refuse("%s carries more than one signature block", obj)
	}
	r, err := payload.Reader()
	if err != nil {
		return s, err
	}
	defer r.Close()
	switch {
	case strings.HasPrefix(sig, beginPGP):
		s.Kind = KindOpenPGP
		return k.verifyOpenPGP(s, sig, r)
	case strings.HasPrefix(sig, beginSSH):
		s.Kind = KindSSH
		return k.verifySSH(s, sig, r, when)
	}
	return s, refuse("%s carries a signature of a kind gitsync does not verify (not OpenPGP or SSH)", obj)
}

func (k *Keys) verifyOpenPGP(s Signer, sig string, payload io.Reader) (Signer, error) {
	if len(k.openpgp) == 0 {
		return s, refuse("%s has an OpenPGP signature by key %s, and the Secret trusts no OpenPGP key", s.Object, pgpIssuer(sig))
	}
	entity, err := openpgp.CheckArmoredDetachedSignature(k.openpgp, payload, strings.NewReader(sig), nil)
	switch {
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		return s, refuse("%s is signed by OpenPGP key %s, which is not a trusted key", s.Object, pgpIssuer(sig))
	case err != nil:
		return s, refuse("%s has an OpenPGP signature that does not verify: %v", s.Object, err)
	}
	s.Fingerprint = strings.ToUpper(fmt.Sprintf("%x", entity.PrimaryKey.Fingerprint))
	if id := entity.PrimaryIdentity(); id != nil {
		s.Identity = id.Name
	}
	return s, nil
}

// pgpIssuer names the key an armored signature says it was made by: its
// issuer fingerprint, else its key ID, else "(unnamed)".
func pgpIssuer(sig string) string {
	block, err := armor.Decode(strings.NewReader(sig))
	if err != nil {
		return "(unreadable)"
	}
	p, err := packet.Read(block.Body)
	if err != nil {
		return "(unreadable)"
	}
	ps, ok := p.(*packet.Signature)
	switch {
	case !ok:
		return "(unreadable)"
	case len(ps.IssuerFingerprint) > 0:
		return strings.ToUpper(fmt.Sprintf("%x", ps.IssuerFingerprint))
	case ps.IssuerKeyId != nil:
		return fmt.Sprintf("%016X", *ps.IssuerKeyId)
	}
	return "(unnamed)"
}

func (k *Keys) verifySSH(s Signer, sig string, payload io.Reader, when time.Time) (Signer, error) {
	parsed, err := sshsig.Unarmor([]byte(sig))
	if err != nil {
		return s, refuse("%s has an SSH signature that does not parse: %v", s.Object, err)
	}
	s.Fingerprint = ssh.FingerprintSHA256(parsed.PublicKey)
	var key *sshKey
	for i := range k.ssh {
		if bytes.Equal(k.ssh[i].pub.Marshal(), parsed.PublicKey.Marshal()) {
			key = &k.ssh[i]
			break
		}
	}
	if key == nil {
		return s, refuse("%s is signed by SSH key %s, which is not a trusted key", s.Object, s.Fingerprint)
	}
	if parsed.Namespace != sshNamespace {
		return s, refuse("%s has an SSH signature for namespace %q, not %q", s.Object, parsed.Namespace, sshNamespace)
	}
	if why := key.allows(sshNamespace, when); why != "" {
		return s, refuse("%s is signed by SSH key %s, but %s", s.Object, s.Fingerprint, why)
	}
	if err := sshsig.Verify(payload, parsed, key.pub, parsed.HashAlgorithm, sshNamespace); err != nil {
		return s, refuse("%s has an SSH signature that does not verify: %v", s.Object, err)
	}
	s.Identity = key.identity
	return s, nil
}
