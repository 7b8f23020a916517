package render

import (
	"sync"

	"gitsync.dev/gitsync/source/sops"
)

// SOPSFile is a SOPS-encrypted file a render read, kept (still encrypted)
// so that each GitSync can decrypt the objects rendered from it with its
// own keys after the shared render (source/sops: the MAC covers the values
// in file order, which decoded objects have lost).
type SOPSFile struct {
	// Path is slash-separated, relative to the repository root.
	Path string
	Data []byte
}

// sopsFiles collects the SOPS files of one render by their mac.
type sopsFiles struct {
	mu    sync.Mutex
	byMAC map[string]SOPSFile
}

// note keeps data when it is a SOPS file.
func (s *sopsFiles) note(path string, data []byte) {
	mac, ok := sops.FileMAC(data)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byMAC == nil {
		s.byMAC = map[string]SOPSFile{}
	}
	s.byMAC[mac] = SOPSFile{Path: path, Data: data}
}

func (s *sopsFiles) files() map[string]SOPSFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byMAC
}

// SOPSLookup finds the SOPS files of r by mac, for sops.Objects.
func (r *Rendered) SOPSLookup(mac string) (path string, data []byte, ok bool) {
	f, ok := r.SOPS[mac]
	return f.Path, f.Data, ok
}
