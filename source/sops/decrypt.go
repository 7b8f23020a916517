package sops

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	yaml "go.yaml.in/yaml/v3"
)

// Plaintext holds the decrypted values of one file, by ciphertext, and
// what each of its documents says it is.
type Plaintext struct {
	// File is the path the file was read from, for messages.
	File   string
	values map[string]any
	// docs are the file's documents; docOf maps a ciphertext to its
	// document.
	docs  []document
	docOf map[string]int
}

// document is what one document of a file says it is, and whether the
// file's MAC covers that (it does not for a mac_only_encrypted file whose
// kind, apiVersion and name are left unencrypted).
type document struct {
	apiVersion, kind, name string
	authenticated          bool
}

// Len is the number of decrypted values.
func (p *Plaintext) Len() int { return len(p.values) }

// Decrypt decrypts the SOPS file data, read from file, with identities,
// and verifies its MAC. It fails with an *Error whose Problem says what
// is wrong: no identity opens the data key (ProblemKey), the MAC does not
// match (ProblemMAC), or the file is not a SOPS file this package reads
// (ProblemFormat).
func Decrypt(file string, data []byte, identities []age.Identity) (*Plaintext, error) {
	docs, md, err := parseFile(data)
	if err != nil {
		return nil, &Error{File: file, Problem: ProblemFormat, Err: err}
	}
	sel, err := md.selection()
	if err != nil {
		return nil, &Error{File: file, Problem: ProblemFormat, Err: err}
	}
	key, err := dataKey(md, identities)
	if err != nil {
		return nil, &Error{File: file, Problem: ProblemKey, Err: err}
	}
	w := &macWalker{key: key, sel: sel, onlyEncrypted: md.MACOnlyEncrypted, hash: sha512.New(),
		plain: &Plaintext{File: file, values: map[string]any{}, docOf: map[string]int{}}}
	if md.MACOnlyEncrypted {
		init := sha256.Sum256([]byte("sops")) // SOPS's fixed start for this mode
		w.hash.Write(init[:])
	}
	for _, doc := range docs {
		w.plain.docs = append(w.plain.docs, document{authenticated: true})
		if err := w.mapping(doc, nil); err != nil {
			return nil, &Error{File: file, Problem: ProblemMAC, Err: err}
		}
	}
	if err := checkMAC(md, key, fmt.Sprintf("%X", w.hash.Sum(nil))); err != nil {
		return nil, &Error{File: file, Problem: ProblemMAC, Err: err}
	}
	return w.plain, nil
}

// parseFile returns the top-level mappings of each document of data, the
// "sops" entry removed, and the metadata of the first document.
func parseFile(data []byte) ([]*yaml.Node, *metadata, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	var md *metadata
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("invalid YAML: %w", err)
		}
		if len(n.Content) == 0 {
			continue
		}
		top := n.Content[0]
		if top.Kind != yaml.MappingNode {
			return nil, nil, errors.New("a document is not a mapping")
		}
		for i := 0; i+1 < len(top.Content); i += 2 {
			if top.Content[i].Value != MetadataKey {
				continue
			}
			if md == nil && len(docs) == 0 {
				md = &metadata{}
				if err := top.Content[i+1].Decode(md); err != nil {
					return nil, nil, fmt.Errorf("invalid sops metadata: %w", err)
				}
			}
			top.Content = append(top.Content[:i:i], top.Content[i+2:]...)
			break
		}
		docs = append(docs, top)
	}
	if md == nil {
		return nil, nil, errors.New("no sops metadata in the first document")
	}
	if md.MAC == "" {
		return nil, nil, errors.New("the sops metadata has no mac")
	}
	return docs, md, nil
}

// dataKey opens the file's data key with the first identity that matches
// one of its age recipients.
func dataKey(md *metadata, identities []age.Identity) ([]byte, error) {
	stanzas, err := md.recipients()
	if err != nil {
		return nil, err
	}
	if len(stanzas) == 0 {
		return nil, errors.New("the file has no age recipient (PGP and KMS keys are not supported)")
	}
	if len(identities) == 0 {
		return nil, errors.New("no age identity to decrypt with")
	}
	recipients := make([]string, 0, len(stanzas))
	for _, s := range stanzas {
		recipients = append(recipients, s.Recipient)
		r, err := age.Decrypt(armor.NewReader(strings.NewReader(s.Enc)), identities...)
		if err != nil {
			continue // another recipient's stanza, or a key that does not match
		}
		key, err := io.ReadAll(io.LimitReader(r, 64))
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("the data key for %s is not 32 bytes", s.Recipient)
		}
		return key, nil
	}
	return nil, fmt.Errorf("none of the %d age identities matches a recipient of the file (%s)", len(identities), strings.Join(recipients, ", "))
}

func checkMAC(md *metadata, key []byte, computed string) error {
	ad := md.LastModified
	if t, err := time.Parse(time.RFC3339, md.LastModified); err == nil {
		ad = t.Format(time.RFC3339)
	}
	plain, _, err := decryptValue(md.MAC, key, ad)
	if err != nil {
		return fmt.Errorf("the MAC does not decrypt: %w", err)
	}
	if subtle.ConstantTimeCompare(plain, []byte(computed)) != 1 {
		return errors.New("MAC mismatch: the file was changed after it was encrypted")
	}
	return nil
}

// macWalker visits the values of a file in order, decrypting the encrypted
// ones and hashing them as SOPS does.
type macWalker struct {
	key           []byte
	sel           *selection
	onlyEncrypted bool
	hash          hash.Hash
	plain         *Plaintext
}

func (w *macWalker) mapping(n *yaml.Node, path []string) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("a key under %s is not a string", pathString(path))
		}
		if err := w.value(v, append(path[:len(path):len(path)], k.Value)); err != nil {
			return err
		}
	}
	return nil
}

func (w *macWalker) value(n *yaml.Node, path []string) error {
	switch n.Kind {
	case yaml.AliasNode:
		return w.value(n.Alias, path)
	case yaml.MappingNode:
		return w.mapping(n, path)
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if err := w.value(item, path); err != nil {
				return err
			}
		}
		return nil
	case yaml.ScalarNode:
		return w.scalar(n, path)
	}
	return nil
}

func (w *macWalker) scalar(n *yaml.Node, path []string) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return fmt.Errorf("value at %s: %w", pathString(path), err)
	}
	if v == nil {
		return nil // SOPS neither encrypts nor hashes null
	}
	encrypted := w.sel.encrypted(path)
	var b []byte
	if encrypted {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("value at %s should be encrypted and is not", pathString(path))
		}
		plain, typ, err := decryptValue(s, w.key, strings.Join(path, ":")+":")
		if err != nil {
			return fmt.Errorf("value at %s: %w", pathString(path), err)
		}
		val, err := typed(plain, typ)
		if err != nil {
			return fmt.Errorf("value at %s: %w", pathString(path), err)
		}
		if s != "" {
			w.plain.values[s] = val
			w.plain.docOf[s] = len(w.plain.docs) - 1
		}
		if typ == "comment" {
			return nil
		}
		b = plain
	} else {
		b = macBytes(v)
	}
	if !w.onlyEncrypted || encrypted {
		w.hash.Write(b)
	}
	w.identity(path, string(b), !w.onlyEncrypted || encrypted)
	return nil
}

// identity records what the current document says it is, from the value b
// at path, and whether the MAC covers it.
func (w *macWalker) identity(path []string, b string, covered bool) {
	doc := &w.plain.docs[len(w.plain.docs)-1]
	switch strings.Join(path, ".") {
	case "apiVersion":
		doc.apiVersion = b
	case "kind":
		doc.kind = b
	case "metadata.name":
		doc.name = b
	default:
		return
	}
	doc.authenticated = doc.authenticated && covered
}

// macBytes is how SOPS feeds an unencrypted value to the MAC.
func macBytes(v any) []byte {
	switch v := v.(type) {
	case string:
		return []byte(v)
	case bool:
		if v {
			return []byte("True")
		}
		return []byte("False")
	case int:
		return []byte(strconv.Itoa(v))
	case int64:
		return []byte(strconv.FormatInt(v, 10))
	case uint64:
		return []byte(strconv.FormatUint(v, 10))
	case float64:
		return []byte(strconv.FormatFloat(v, 'f', -1, 64))
	}
	return []byte(fmt.Sprint(v))
}

func pathString(path []string) string {
	if len(path) == 0 {
		return "the top level"
	}
	return strings.Join(path, ".")
}
