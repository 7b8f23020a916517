package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"golang.org/x/crypto/ssh"
)

// Data keys of a trusted-keys Secret, by how they are read.
const (
	// SuffixOpenPGP ends every data key holding armored OpenPGP public
	// keys (one or more blocks, any number of keys).
	SuffixOpenPGP = ".asc"
	// KeyAllowedSigners is an OpenSSH allowed signers file (ssh-keygen(1),
	// "ALLOWED SIGNERS"): principals, options, key type, key.
	KeyAllowedSigners = "allowed_signers"
	// SuffixSSH ends every data key holding SSH public keys in
	// authorized_keys format, one a line; a key's comment names its signer.
	SuffixSSH = ".pub"
)

// sshNamespace is the namespace git signs and verifies with.
const sshNamespace = "git"

// Keys are the trusted keys of one Secret, parsed.
type Keys struct {
	openpgp openpgp.EntityList
	ssh     []sshKey
}

// sshKey is one trusted SSH key with what its line allows.
type sshKey struct {
	pub ssh.PublicKey
	// identity is the principals of an allowed_signers line, or the comment
	// of a .pub line (else the data key's name).
	identity string
	// namespaces, when set, are the only namespaces the key may sign for.
	namespaces []string
	// validAfter and validBefore bound the signing time, when set.
	validAfter, validBefore time.Time
}

// Digest identifies data (a Secret's data) by its bytes: equal data, equal
// digest, whatever the map order.
func Digest(data map[string][]byte) string {
	h := sha256.New()
	var n [8]byte
	for _, k := range slices.Sorted(maps.Keys(data)) {
		for _, b := range [][]byte{[]byte(k), data[k]} {
			binary.BigEndian.PutUint64(n[:], uint64(len(b)))
			h.Write(n[:])
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ParseKeys reads the trusted keys of data, the Secret origin names
// ("Secret/ns/name", for messages). Data keys other than those above are
// ignored; a Secret with no trusted key at all, or a key that does not
// parse, is an *Error naming the data key (and line), never its content.
func ParseKeys(origin string, data map[string][]byte) (*Keys, error) {
	k := &Keys{}
	for _, name := range slices.Sorted(maps.Keys(data)) {
		var err error
		switch {
		case strings.HasSuffix(name, SuffixOpenPGP):
			err = k.addOpenPGP(data[name])
		case name == KeyAllowedSigners:
			err = k.addSSH(data[name], true, name)
		case strings.HasSuffix(name, SuffixSSH):
			err = k.addSSH(data[name], false, name)
		}
		if err != nil {
			return nil, &Error{Why: fmt.Sprintf("%s key %q: %v", origin, name, err)}
		}
	}
	if len(k.openpgp) == 0 && len(k.ssh) == 0 {
		have := slices.Sorted(maps.Keys(data))
		return nil, &Error{Why: fmt.Sprintf("%s holds no trusted key: want data keys ending %q (OpenPGP), named %q or ending %q (SSH); it has %s",
			origin, SuffixOpenPGP, KeyAllowedSigners, SuffixSSH, listOrNone(have))}
	}
	return k, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (k *Keys) addOpenPGP(b []byte) error {
	// One value may hold several armored blocks, as `gpg --export --armor A
	// B` (one block) or concatenated exports (several) write them.
	rest := b
	found := 0
	for {
		i := bytes.Index(rest, []byte("-----BEGIN PGP"))
		if i < 0 {
			break
		}
		rest = rest[i:]
		end := bytes.Index(rest, []byte("-----END PGP"))
		if end < 0 {
			return fmt.Errorf("an armored block has no END line")
		}
		if nl := bytes.IndexByte(rest[end:], '\n'); nl >= 0 {
			end += nl + 1
		} else {
			end = len(rest)
		}
		ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(rest[:end]))
		if err != nil {
			return fmt.Errorf("not an armored OpenPGP public key: %v", err)
		}
		k.openpgp = append(k.openpgp, ring...)
		found += len(ring)
		rest = rest[end:]
	}
	if found == 0 {
		return fmt.Errorf("no armored OpenPGP public key (-----BEGIN PGP PUBLIC KEY BLOCK-----)")
	}
	return nil
}

// addSSH reads one SSH public key a line, skipping blank lines and
// comments; allowed says the lines start with principals.
func (k *Keys) addSSH(b []byte, allowed bool, name string) error {
	found := 0
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, err := parseSSHLine(line, allowed)
		if err != nil {
			return fmt.Errorf("line %d: %v", i+1, err)
		}
		if key.identity == "" {
			key.identity = name
		}
		k.ssh = append(k.ssh, key)
		found++
	}
	if found == 0 {
		return fmt.Errorf("no SSH public key")
	}
	return nil
}

func parseSSHLine(line string, allowed bool) (sshKey, error) {
	var key sshKey
	if allowed {
		principals, rest := firstField(line)
		if principals == "" || rest == "" {
			return key, fmt.Errorf("want principals, options and a key")
		}
		key.identity = strings.Trim(principals, `"`)
		line = rest
	}
	pub, comment, options, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return key, fmt.Errorf("not an SSH public key: %v", err)
	}
	key.pub = pub
	if !allowed {
		key.identity = comment
	}
	for _, o := range options {
		name, value, _ := strings.Cut(o, "=")
		value = strings.Trim(value, `"`)
		switch strings.ToLower(name) {
		case "namespaces":
			key.namespaces = strings.Split(value, ",")
		case "valid-after":
			key.validAfter, err = parseSSHTime(value)
		case "valid-before":
			key.validBefore, err = parseSSHTime(value)
		case "cert-authority":
			err = fmt.Errorf("cert-authority is not supported: list the signers' own keys")
		default:
			if allowed {
				err = fmt.Errorf("option %q is not supported", name)
			}
		}
		if err != nil {
			return key, err
		}
	}
	return key, nil
}

// firstField splits off the first space-separated field, which may be
// double-quoted.
func firstField(s string) (field, rest string) {
	if strings.HasPrefix(s, `"`) {
		if end := strings.Index(s[1:], `"`); end >= 0 {
			return s[:end+2], strings.TrimSpace(s[end+2:])
		}
	}
	field, rest, _ = strings.Cut(s, " ")
	return field, strings.TrimSpace(rest)
}

// parseSSHTime reads ssh-keygen's YYYYMMDD[HHMM[SS]] time, in UTC (a
// trailing Z is accepted).
func parseSSHTime(s string) (time.Time, error) {
	s = strings.TrimSuffix(s, "Z")
	for _, layout := range []string{"20060102", "200601021504", "20060102150405"} {
		if len(s) == len(layout) {
			if t, err := time.Parse(layout, s); err == nil {
				return t, nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("time %q is not YYYYMMDD[HHMM[SS]]", s)
}

// allows reports whether key may have signed for namespace at when.
func (k sshKey) allows(namespace string, when time.Time) string {
	if len(k.namespaces) > 0 && !slices.ContainsFunc(k.namespaces, func(n string) bool { return n == namespace || n == "*" }) {
		return fmt.Sprintf("its allowed_signers line does not allow namespace %q", namespace)
	}
	if !k.validAfter.IsZero() && when.Before(k.validAfter) {
		return "it was made before the key's valid-after time"
	}
	if !k.validBefore.IsZero() && !when.Before(k.validBefore) {
		return "it was made after the key's valid-before time"
	}
	return ""
}
