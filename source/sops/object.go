package sops

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

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
// Object decrypts whatever kind obj is; Objects, the pipeline's way in,
// also refuses to decrypt into anything but a Secret the file holds.
func (p *Plaintext) Object(obj *unstructured.Unstructured) (*unstructured.Unstructured, []string, error) {
	out, paths, _, err := p.object(obj)
	return out, paths, err
}

// object is Object, also returning the documents the values came from.
func (p *Plaintext) object(obj *unstructured.Unstructured) (*unstructured.Unstructured, []string, map[int]bool, error) {
	out := obj.DeepCopy()
	delete(out.Object, MetadataKey)
	var paths []string
	from := map[int]bool{}
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
			from[p.docOf[v]] = true
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
		return nil, nil, nil, err
	}
	return out, paths, from, nil
}

// checkSecret refuses to put decrypted values anywhere but into a Secret
// the file holds: out, as the whole render left it (kustomize patches
// included), must be a core Secret, and so must each document its values
// came from, as the file's MAC proves; and out's name must contain the name
// of one of those documents (a kustomize prefix or suffix may surround it).
// A patch that changed the kind, or a mac_only_encrypted file whose kind or
// name was edited, would otherwise hand plaintext to every reader of
// ConfigMaps.
func (p *Plaintext) checkSecret(out *unstructured.Unstructured, from map[int]bool) error {
	if len(from) == 0 {
		return nil
	}
	if !isSecret(out.GetAPIVersion(), out.GetKind()) {
		return &Error{File: p.File, Problem: ProblemKind, Err: fmt.Errorf(
			"its values decrypt into Secrets only, and the rendered object is a %s (%s): was its kind changed by a patch?", out.GetKind(), out.GetAPIVersion())}
	}
	named := false
	for i := range from {
		d := p.docs[i]
		switch {
		case !d.authenticated:
			return &Error{File: p.File, Problem: ProblemKind, Err: errors.New(
				"its MAC does not cover the kind, apiVersion and name of the object it holds (mac_only_encrypted), so a changed kind cannot be detected; encrypt it without mac_only_encrypted")}
		case !isSecret(d.apiVersion, d.kind):
			return &Error{File: p.File, Problem: ProblemKind, Err: fmt.Errorf(
				"its values decrypt into Secrets only, and the document they come from is a %s", d.kind)}
		}
		named = named || (d.name != "" && strings.Contains(out.GetName(), d.name))
	}
	if !named {
		return &Error{File: p.File, Problem: ProblemKind, Err: fmt.Errorf(
			"its values decrypt only into the Secret it holds, and Secret %s is not that one", out.GetName())}
	}
	return nil
}

func isSecret(apiVersion, kind string) bool { return apiVersion == "v1" && kind == "Secret" }

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
