package sops

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"filippo.io/age"
)

// KeySuffix ends the names of the Secret keys that hold age identities.
const KeySuffix = ".agekey"

// IdentitiesFromSecret parses the age identities in the keys of a Secret's
// data that end in KeySuffix (each may hold several, one per line, with #
// comments). An error names the Secret key, never its content.
func IdentitiesFromSecret(data map[string][]byte) ([]age.Identity, error) {
	names := make([]string, 0, len(data))
	for k := range data {
		if strings.HasSuffix(k, KeySuffix) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("no key ending in %q", KeySuffix)
	}
	var out []age.Identity
	for _, k := range names {
		ids, err := age.ParseIdentities(bytes.NewReader(data[k]))
		if err != nil {
			return nil, fmt.Errorf("key %q does not hold age identities (AGE-SECRET-KEY-1...)", k)
		}
		out = append(out, ids...)
	}
	return out, nil
}

// Sniff reports whether a file's bytes may hold a SOPS document: a line
// starting with "sops:" (YAML) or holding "sops": (JSON). It is the cheap
// test a render runs on every file it reads.
func Sniff(data []byte) bool {
	return bytes.HasPrefix(data, []byte("sops:")) || bytes.Contains(data, []byte("\nsops:")) ||
		bytes.Contains(data, []byte(`"sops":`))
}
