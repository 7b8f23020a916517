package verify

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"go.yaml.in/yaml/v3"
)

// MaxProvenanceBytes caps a Helm provenance file: a chart's Chart.yaml and
// one line per archive, clearsigned (a few KiB in practice).
const MaxProvenanceBytes = 256 << 10

// VerifyProvenance checks a Helm provenance file (NAME-VERSION.tgz.prov, as
// `helm package --sign` writes it) for the chart archive of digest
// ("sha256:<hex>"): one OpenPGP clearsigned message, signed by a key of k,
// whose files list gives that digest. object names the chart in messages
// ("chart NAME VERSION"). A refusal is an *Error saying why; the file's
// Chart.yaml part is not trusted for anything (the digest is what is
// signed).
func (k *Keys) VerifyProvenance(object string, prov []byte, digest string) (Signer, error) {
	s := Signer{Object: object, Kind: KindOpenPGP}
	if len(prov) > MaxProvenanceBytes {
		return s, &Error{Why: fmt.Sprintf("%s: its provenance file is larger than %d bytes", object, MaxProvenanceBytes)}
	}
	block, rest := clearsign.Decode(prov)
	if block == nil {
		return s, &Error{Why: object + ": its provenance file is not an OpenPGP clearsigned message"}
	}
	if more, _ := clearsign.Decode(rest); more != nil {
		return s, &Error{Why: object + ": its provenance file holds more than one signed message"}
	}
	// The armored signature as it stands in the file, for the one OpenPGP
	// check of commits and tags (verifyOpenPGP names an unknown signer).
	sig, ok := armoredSignature(prov)
	if !ok {
		return s, &Error{Why: object + ": its provenance file has no signature block"}
	}
	s, err := k.verifyOpenPGP(s, sig, bytes.NewReader(block.Bytes))
	if err != nil {
		return s, &Error{Why: err.Error()}
	}
	files, err := provenanceFiles(block.Plaintext)
	if err != nil {
		return s, &Error{Why: fmt.Sprintf("%s: its provenance file %v", object, err)}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if files[name] == digest {
			return s, nil
		}
	}
	return s, &Error{Why: fmt.Sprintf("%s: its provenance file is signed by %s but lists no archive of digest %s (the archive is not the one signed)", object, s.Fingerprint, digest)}
}

// armoredSignature is the "BEGIN PGP SIGNATURE" block of a clearsigned
// file, lines as they stand.
func armoredSignature(prov []byte) (string, bool) {
	begin := bytes.Index(prov, []byte(beginPGP))
	if begin < 0 {
		return "", false
	}
	const endPGP = "-----END PGP SIGNATURE-----"
	end := bytes.Index(prov[begin:], []byte(endPGP))
	if end < 0 {
		return "", false
	}
	return string(prov[begin:begin+end+len(endPGP)]) + "\n", true
}

// provenanceFiles reads the signed message's second document: the
// archives it signs, name → "sha256:<hex>".
func provenanceFiles(msg []byte) (map[string]string, error) {
	parts := bytes.SplitN(msg, []byte("\n...\n"), 2)
	if len(parts) < 2 {
		return nil, fmt.Errorf("signs no files list (no \"...\" after its Chart.yaml)")
	}
	var sums struct {
		Files map[string]string `yaml:"files"`
	}
	if err := yaml.Unmarshal(parts[1], &sums); err != nil {
		return nil, fmt.Errorf("signs a files list that does not parse: %v", err)
	}
	if len(sums.Files) == 0 {
		return nil, fmt.Errorf("signs an empty files list")
	}
	for name, sum := range sums.Files {
		sums.Files[name] = strings.TrimSpace(sum)
	}
	return sums.Files, nil
}
