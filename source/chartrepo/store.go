package chartrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// store keeps chart archives on disk, one file per SHA-256 digest.
type store struct {
	dir string
	// verified are the digests whose file this process wrote or hashed
	// already, so a resolve of a stored chart does not hash it again (the
	// render checks the digest of what it reads anyway).
	verified *sync.Map
}

func newStore(dir string) (store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return store{}, fmt.Errorf("chart cache %s: %w", dir, err)
	}
	return store{dir: dir, verified: &sync.Map{}}, nil
}

// path is where the archive of digest ("sha256:<hex>") lies.
func (s store) path(digest string) (string, bool) {
	hexPart, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hexPart) != 64 {
		return "", false
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return "", false
	}
	return filepath.Join(s.dir, "sha256-"+hexPart+".tgz"), true
}

// has reports whether the archive of digest is stored whole: its file
// hashes to the digest. A damaged file is removed, to be downloaded again.
func (s store) has(digest string) (string, bool) {
	p, ok := s.path(digest)
	if !ok {
		return "", false
	}
	if _, ok := s.verified.Load(digest); ok {
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
		s.verified.Delete(digest)
	}
	f, err := os.Open(p)
	if err != nil {
		return p, false
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	f.Close()
	if err == nil && "sha256:"+hex.EncodeToString(h.Sum(nil)) == digest {
		s.verified.Store(digest, true)
		return p, true
	}
	os.Remove(p)
	return p, false
}

// put stores data as the archive of digest, checking it first; a file is
// written whole (temporary name, then renamed) so a reader never sees part.
func (s store) put(digest string, data []byte) (string, error) {
	p, ok := s.path(digest)
	if !ok {
		return "", fmt.Errorf("digest %q is not a sha256 digest", digest)
	}
	sum := sha256.Sum256(data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != digest {
		return "", fmt.Errorf("downloaded chart hashes to %s, its repository lists %s", got, digest)
	}
	tmp, err := os.CreateTemp(s.dir, ".download-*")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o444)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("chart cache: %w", err)
	}
	s.verified.Store(digest, true)
	return p, nil
}
