package sops

import (
	"errors"
	"fmt"
	"slices"

	"filippo.io/age"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/object"
)

// Files finds the SOPS file a render read, by the mac of its metadata
// (render.Rendered.SOPS); ok is false when no file has that mac.
type Files func(mac string) (path string, data []byte, ok bool)

// Keys returns the identities to decrypt with; it is called at most once,
// and only when an object is encrypted. Its error says why there are none
// (no decryption configured, an unreadable key Secret).
type Keys func() ([]age.Identity, error)

// ObjectError is an encrypted object that could not be decrypted.
type ObjectError struct {
	Object object.ID
	// File is where the object was read from, "" when unknown.
	File string
	Err  error
}

func (e *ObjectError) Error() string {
	var de *Error
	if errors.As(e.Err, &de) {
		return fmt.Sprintf("%s: %v", e.Object, e.Err) // it names the file
	}
	if e.File == "" {
		return fmt.Sprintf("%s is SOPS-encrypted: %v", e.Object, e.Err)
	}
	return fmt.Sprintf("%s (%s) is SOPS-encrypted: %v", e.Object, e.File, e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }

// Objects returns objs with each SOPS document replaced by a decrypted copy
// (objs and its objects are not changed; they may be a shared render's),
// and the decrypted string values, to keep out of messages. Each file is
// decrypted once, its MAC verified. An encrypted object is never passed
// through: without a file or keys it is an *ObjectError. Values decrypt
// only into a Secret the file holds, as the render left it: an object whose
// kind a patch changed, a file whose MAC does not cover its kind
// (mac_only_encrypted), or a document of another kind is an *ObjectError
// wrapping an *Error with ProblemKind.
func Objects(objs []*unstructured.Unstructured, files Files, keys Keys) ([]*unstructured.Unstructured, []string, error) {
	var ids []age.Identity
	plains := map[string]*Plaintext{}
	var hidden []string
	out, cloned := objs, false
	for i, obj := range objs {
		mac := MACOf(obj)
		if mac == "" {
			continue
		}
		e := &ObjectError{Object: object.IDOf(obj)}
		path, data, found := "", []byte(nil), false
		if files != nil {
			path, data, found = files(mac)
		}
		e.File = path
		if ids == nil {
			var err error
			if ids, err = keys(); err != nil {
				e.Err = err
				return nil, nil, e
			}
		}
		if !found {
			e.Err = fmt.Errorf("it was not read from a SOPS file of the repository (generated, or changed by a generator)")
			return nil, nil, e
		}
		p := plains[mac]
		if p == nil {
			var err error
			if p, err = Decrypt(path, data, ids); err != nil {
				e.Err = err
				return nil, nil, e
			}
			plains[mac] = p
			hidden = append(hidden, p.Strings()...)
		}
		plain, _, from, err := p.object(obj)
		if err == nil {
			err = p.checkSecret(plain, from)
		}
		if err != nil {
			e.Err = err
			return nil, nil, e
		}
		if !cloned {
			out, cloned = slices.Clone(objs), true
		}
		out[i] = plain
	}
	return out, hidden, nil
}
