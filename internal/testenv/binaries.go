package testenv

import (
	"fmt"
	"os"
	"path/filepath"
)

// BinVersion names the pinned control-plane build; it must match the version
// string in hack/tools/build.sh so both agree on the cache directory.
const BinVersion = "k8s-v1.37.2-etcd-v3.7.3-kwok-v0.7.0"

// BinDir returns the directory holding etcd, kube-apiserver and friends:
// $GITSYNC_TESTBIN if set, else the per-user cache hack/tools/build.sh fills.
// It fails with the command to run when a binary is missing.
func BinDir(names ...string) (string, error) {
	dir := os.Getenv("GITSYNC_TESTBIN")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("locate control-plane binaries: %w", err)
			}
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "gitsync", "testbin", BinVersion)
	}
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("control-plane binary %s missing in %s (run `make testbin` to build it): %w", name, dir, err)
		}
	}
	return dir, nil
}
