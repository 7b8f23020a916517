package render

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// readFile relies on os.Root, not on an earlier resolve, to stay inside: a
// symlink swapped in after the check is still refused.
func TestRepoRootReadFileRefusesEscapeWithoutResolve(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"repo/passwd.yaml":   "symlink:/etc/passwd",
		"repo/up/x.yaml":     "symlink:../../outside/x.yaml",
		"outside/x.yaml":     configMap("x"),
		"repo/inside.yaml":   configMap("a"),
		"repo/via-link.yaml": "symlink:inside.yaml",
	})
	repo, err := openRepoRoot(filepath.Join(dir, "repo"), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	tests := []struct {
		path  string
		class error
	}{
		{"passwd.yaml", ErrOutsideRoot},
		{"up/x.yaml", ErrOutsideRoot},
		{"missing.yaml", errNotFound},
		{"via-link.yaml", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			b, err := repo.readFile(context.Background(), tt.path)
			if tt.class == nil {
				if err != nil || string(b) != configMap("a") {
					t.Fatalf("readFile = %q, %v", b, err)
				}
				return
			}
			if b != nil || !errors.Is(err, tt.class) {
				t.Fatalf("readFile = %q, %v; want nil, %v", b, err, tt.class)
			}
		})
	}
}

func TestLocalPath(t *testing.T) {
	tests := []struct {
		in, want string
		class    error
	}{
		{"", ".", nil},
		{".", ".", nil},
		{"./deploy/", "deploy", nil},
		{"a/../b", "b", nil},
		{"..", "", ErrOutsideRoot},
		{"a/../../b", "", ErrOutsideRoot},
		{"/etc", "", ErrOutsideRoot},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := localPath(tt.in)
			if got != tt.want || !errors.Is(err, tt.class) {
				t.Errorf("localPath(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.class)
			}
		})
	}
}
