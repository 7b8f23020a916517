package sops

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MACOf returns the mac of obj's top-level sops metadata, "" when obj is
// not a SOPS document. Every document of one file carries the same mac,
// and no two encryptions give the same one, so it names the file.
func MACOf(obj *unstructured.Unstructured) string {
	md, ok := obj.Object[MetadataKey].(map[string]any)
	if !ok {
		return ""
	}
	mac, _ := md["mac"].(string)
	return mac
}

// IsEncrypted reports whether obj is a SOPS document: a top-level sops
// mapping with a mac.
func IsEncrypted(obj *unstructured.Unstructured) bool { return MACOf(obj) != "" }

// Object returns a copy of obj with every ENC[...] value replaced by its
// plaintext and the sops metadata removed, and the field paths it
// decrypted. obj itself is not changed. A ciphertext that is not one of
// this file's values is an error: the object was not rendered from it.
func (p *Plaintext) Object(obj *unstructured.Unstructured) (*unstructured.Unstructured, []string, error) {
	out := obj.DeepCopy()
	delete(out.Object, MetadataKey)
	var paths []string
	var walk func(v any, path string) (any, error)
	walk = func(v any, path string) (any, error) {
		switch v := v.(type) {
		case string:
			if !IsCiphertext(v) {
				return v, nil
			}
			plain, ok := p.values[v]
			if !ok {
				return nil, fmt.Errorf("%s: the encrypted value at %s is not one of the file's", p.File, path)
			}
			paths = append(paths, path)
			return plain, nil
		case map[string]any:
			for k, e := range v {
				n, err := walk(e, joinPath(path, k))
				if err != nil {
					return nil, err
				}
				v[k] = n
			}
		case []any:
			for i, e := range v {
				n, err := walk(e, path+"["+strconv.Itoa(i)+"]")
				if err != nil {
					return nil, err
				}
				v[i] = n
			}
		}
		return v, nil
	}
	if _, err := walk(out.Object, ""); err != nil {
		return nil, nil, err
	}
	return out, paths, nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Strings returns the decrypted string values, for callers that must keep
// them out of text they did not build (error messages from the API).
func (p *Plaintext) Strings() []string {
	out := make([]string, 0, len(p.values))
	for _, v := range p.values {
		if s, ok := v.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}
