package sops

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MetadataKey is the top-level key holding a SOPS file's metadata.
const MetadataKey = "sops"

// metadata is the part of the "sops" mapping this package reads.
type metadata struct {
	Age                     []ageStanza `yaml:"age"`
	KeyGroups               []keyGroup  `yaml:"key_groups"`
	ShamirThreshold         int         `yaml:"shamir_threshold"`
	LastModified            string      `yaml:"lastmodified"`
	MAC                     string      `yaml:"mac"`
	UnencryptedSuffix       string      `yaml:"unencrypted_suffix"`
	EncryptedSuffix         string      `yaml:"encrypted_suffix"`
	UnencryptedRegex        string      `yaml:"unencrypted_regex"`
	EncryptedRegex          string      `yaml:"encrypted_regex"`
	UnencryptedCommentRegex string      `yaml:"unencrypted_comment_regex"`
	EncryptedCommentRegex   string      `yaml:"encrypted_comment_regex"`
	MACOnlyEncrypted        bool        `yaml:"mac_only_encrypted"`
	Version                 string      `yaml:"version"`
}

type ageStanza struct {
	Recipient string `yaml:"recipient"`
	Enc       string `yaml:"enc"`
}

type keyGroup struct {
	Age []ageStanza `yaml:"age"`
}

// recipients returns the age stanzas of the one key group.
func (m *metadata) recipients() ([]ageStanza, error) {
	switch {
	case len(m.KeyGroups) > 1 || m.ShamirThreshold > 1:
		return nil, errors.New("several key groups (a Shamir split) are not supported")
	case len(m.KeyGroups) == 1:
		return m.KeyGroups[0].Age, nil
	}
	return m.Age, nil
}

// selection decides which values are encrypted, as SOPS's options do.
type selection struct {
	unencryptedSuffix, encryptedSuffix string
	unencryptedRegex, encryptedRegex   *regexp.Regexp
}

func (m *metadata) selection() (*selection, error) {
	if m.UnencryptedCommentRegex != "" || m.EncryptedCommentRegex != "" {
		return nil, errors.New("encrypted_comment_regex and unencrypted_comment_regex are not supported")
	}
	s := &selection{unencryptedSuffix: m.UnencryptedSuffix, encryptedSuffix: m.EncryptedSuffix}
	var err error
	if m.UnencryptedRegex != "" {
		if s.unencryptedRegex, err = regexp.Compile(m.UnencryptedRegex); err != nil {
			return nil, fmt.Errorf("unencrypted_regex: %w", err)
		}
	}
	if m.EncryptedRegex != "" {
		if s.encryptedRegex, err = regexp.Compile(m.EncryptedRegex); err != nil {
			return nil, fmt.Errorf("encrypted_regex: %w", err)
		}
	}
	return s, nil
}

// encrypted reports whether the value at path (its keys from the top)
// is encrypted; the later rules win, in SOPS's order.
func (s *selection) encrypted(path []string) bool {
	enc := true
	if s.unencryptedSuffix != "" && anyKey(path, func(k string) bool { return strings.HasSuffix(k, s.unencryptedSuffix) }) {
		enc = false
	}
	if s.encryptedSuffix != "" {
		enc = anyKey(path, func(k string) bool { return strings.HasSuffix(k, s.encryptedSuffix) })
	}
	if s.unencryptedRegex != nil && anyKey(path, s.unencryptedRegex.MatchString) {
		enc = false
	}
	if s.encryptedRegex != nil {
		enc = anyKey(path, s.encryptedRegex.MatchString)
	}
	return enc
}

func anyKey(path []string, f func(string) bool) bool {
	for _, k := range path {
		if f(k) {
			return true
		}
	}
	return false
}

// encPattern is one encrypted value.
var encPattern = regexp.MustCompile(`^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]`)

// IsCiphertext reports whether s is a SOPS-encrypted value.
func IsCiphertext(s string) bool { return strings.HasPrefix(s, "ENC[AES256_GCM,") }

// decryptValue opens one ENC[...] value bound to additional data ad and
// returns its plaintext bytes and type. An empty string is SOPS's empty
// value and stays empty.
func decryptValue(value string, key []byte, ad string) ([]byte, string, error) {
	if value == "" {
		return nil, "str", nil
	}
	m := encPattern.FindStringSubmatch(value)
	if m == nil {
		return nil, "", errors.New("not an ENC[AES256_GCM,...] value")
	}
	var parts [3][]byte
	for i, name := range []string{"data", "iv", "tag"} {
		b, err := base64.StdEncoding.DecodeString(m[i+1])
		if err != nil {
			return nil, "", fmt.Errorf("%s is not base64", name)
		}
		parts[i] = b
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, "", err
	}
	if len(parts[1]) == 0 || len(parts[2]) != 16 {
		return nil, "", errors.New("bad iv or tag length")
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(parts[1]))
	if err != nil {
		return nil, "", err
	}
	plain, err := gcm.Open(nil, parts[1], append(bytes.Clone(parts[0]), parts[2]...), []byte(ad))
	if err != nil {
		return nil, "", errors.New("authentication failed")
	}
	return plain, m[4], nil
}

// typed converts a decrypted value to the JSON-compatible type that
// Kubernetes objects hold.
func typed(plain []byte, typ string) (any, error) {
	s := string(plain)
	switch typ {
	case "str", "bytes", "time", "comment":
		return s, nil
	case "int":
		return strconv.ParseInt(s, 10, 64)
	case "float":
		return strconv.ParseFloat(s, 64)
	case "bool":
		return strconv.ParseBool(s)
	}
	return nil, fmt.Errorf("unknown value type %q", typ)
}
