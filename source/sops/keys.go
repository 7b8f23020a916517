package sops

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"filippo.io/age"
	yaml "go.yaml.in/yaml/v3"
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

// FileMAC returns the mac of a SOPS file's metadata (its first document's
// top-level sops.mac), the key under which a render keeps the file for
// Decrypt; ok is false for anything else. It reads only the metadata.
func FileMAC(data []byte) (mac string, ok bool) {
	if !Sniff(data) {
		return "", false
	}
	var doc struct {
		SOPS struct {
			MAC string `yaml:"mac"`
		} `yaml:"sops"`
	}
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil || doc.SOPS.MAC == "" {
		return "", false
	}
	return doc.SOPS.MAC, true
}
