// Package sopstest writes SOPS-encrypted YAML files for tests, with age
// recipients, in the format source/sops reads (and the sops CLI writes):
// tests can make a fresh key and an encrypted Secret without a fixture.
// It is not used by gitsync itself.
package sopstest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	yaml "go.yaml.in/yaml/v3"
)

// Options select what to encrypt, as sops's flags of the same names.
type Options struct {
	// EncryptedRegex, when set, encrypts only values below a key matching
	// it (Kubernetes Secrets use "^(data|stringData)$").
	EncryptedRegex string
	// LastModified is the time recorded in the metadata; now when zero.
	LastModified time.Time
}

// Encrypt encrypts every document of the YAML plain for recipients.
func Encrypt(plain []byte, opts Options, recipients ...*age.X25519Recipient) ([]byte, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	var re *regexp.Regexp
	if opts.EncryptedRegex != "" {
		re = regexp.MustCompile(opts.EncryptedRegex)
	}
	dec := yaml.NewDecoder(bytes.NewReader(plain))
	h := sha512.New()
	var docs []*yaml.Node
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if err := walk(n.Content[0], nil, func(v *yaml.Node, path []string) error {
			var val any
			if err := v.Decode(&val); err != nil || val == nil {
				return err
			}
			b, typ := plainBytes(val)
			h.Write(b)
			if re != nil && !anyMatch(re, path) {
				return nil
			}
			enc, err := seal(b, typ, key, strings.Join(path, ":")+":")
			v.SetString(enc)
			v.Style = 0
			return err
		}); err != nil {
			return nil, err
		}
		docs = append(docs, &n)
	}
	lm := opts.LastModified
	if lm.IsZero() {
		lm = time.Now()
	}
	lastModified := lm.UTC().Format(time.RFC3339)
	mac, err := seal([]byte(fmt.Sprintf("%X", h.Sum(nil))), "str", key, lastModified)
	if err != nil {
		return nil, err
	}
	var stanzas []map[string]string
	for _, r := range recipients {
		var buf bytes.Buffer
		aw := armor.NewWriter(&buf)
		w, err := age.Encrypt(aw, r)
		if err != nil {
			return nil, err
		}
		w.Write(key)
		w.Close()
		aw.Close()
		stanzas = append(stanzas, map[string]string{"recipient": r.String(), "enc": buf.String()})
	}
	md := map[string]any{"age": stanzas, "lastmodified": lastModified, "mac": mac, "version": "3.13.3"}
	if opts.EncryptedRegex != "" {
		md["encrypted_regex"] = opts.EncryptedRegex
	}
	var out bytes.Buffer
	for i, d := range docs {
		var mdNode yaml.Node
		if err := mdNode.Encode(md); err != nil {
			return nil, err
		}
		top := d.Content[0]
		top.Content = append(top.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "sops"}, &mdNode)
		if i > 0 {
			out.WriteString("---\n")
		}
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		out.Write(b)
	}
	return out.Bytes(), nil
}

func walk(n *yaml.Node, path []string, leaf func(*yaml.Node, []string) error) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := walk(n.Content[i+1], append(path[:len(path):len(path)], n.Content[i].Value), leaf); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if err := walk(c, path, leaf); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		return leaf(n, path)
	}
	return nil
}

func anyMatch(re *regexp.Regexp, path []string) bool {
	for _, p := range path {
		if re.MatchString(p) {
			return true
		}
	}
	return false
}

func plainBytes(v any) ([]byte, string) {
	switch v := v.(type) {
	case bool:
		if v {
			return []byte("True"), "bool"
		}
		return []byte("False"), "bool"
	case int:
		return []byte(strconv.Itoa(v)), "int"
	case float64:
		return []byte(strconv.FormatFloat(v, 'f', -1, 64)), "float"
	}
	return []byte(fmt.Sprint(v)), "str"
}

func seal(plain []byte, typ string, key []byte, ad string) (string, error) {
	if len(plain) == 0 && typ == "str" {
		return "", nil
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return "", err
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, 32)
	if err != nil {
		return "", err
	}
	iv := make([]byte, 32)
	if _, err := rand.Read(iv); err != nil {
		return "", err
	}
	out := gcm.Seal(nil, iv, plain, []byte(ad))
	n := len(out) - 16
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("ENC[AES256_GCM,data:%s,iv:%s,tag:%s,type:%s]", b64(out[:n]), b64(iv), b64(out[n:]), typ), nil
}
