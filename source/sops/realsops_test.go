package sops_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/source/sops"
)

// TestFilesFromTheSOPSCLI reads files encrypted by the sops CLI itself
// (v3.13.3, `sops --encrypt --age R ...`; testdata/realsops/README.md says
// how each was made), not by our own sopstest writer: the format we read is
// the one users commit. Each X.enc.yaml must decrypt to X.yaml exactly.
// The key in that directory is a throwaway made for these files only.
func TestFilesFromTheSOPSCLI(t *testing.T) {
	dir, ids := realSOPS(t)
	encs, _ := filepath.Glob(filepath.Join(dir, "*.enc.yaml"))
	if len(encs) < 4 {
		t.Fatalf("found %d encrypted fixtures, want 4", len(encs))
	}
	for _, enc := range encs {
		t.Run(filepath.Base(enc), func(t *testing.T) {
			data, err := os.ReadFile(enc)
			if err != nil {
				t.Fatal(err)
			}
			if !sops.Sniff(data) {
				t.Fatal("not recognised as a SOPS file")
			}
			p, err := sops.Decrypt(enc, data, ids)
			if err != nil {
				t.Fatalf("decrypt: %v", err)
			}
			got, _, err := p.Object(decodeOne(t, data))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := os.ReadFile(strings.TrimSuffix(enc, ".enc.yaml") + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(decodeOne(t, plain).Object, got.Object); diff != "" {
				t.Errorf("decrypted differs from the plaintext sops encrypted (-want +got):\n%s", diff)
			}

			// A value changed by hand breaks the MAC sops wrote.
			tampered := strings.Replace(string(data), "ENC[AES256_GCM,data:", "ENC[AES256_GCM,data:A", 1)
			if _, err := sops.Decrypt(enc, []byte(tampered), ids); err == nil {
				t.Error("a tampered value decrypted")
			}
			// Another key opens nothing.
			other, _ := age.GenerateX25519Identity()
			if _, err := sops.Decrypt(enc, data, []age.Identity{other}); err == nil {
				t.Error("decrypted with a key it was not encrypted to")
			}
		})
	}
}

func decodeOne(t *testing.T, data []byte) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// realSOPS returns the directory of the sops CLI's files and the identities
// of its throwaway key.
func realSOPS(t *testing.T) (string, []age.Identity) {
	t.Helper()
	dir := filepath.Join("testdata", "realsops")
	keyData, err := os.ReadFile(filepath.Join(dir, "test-only.agekey"))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := sops.IdentitiesFromSecret(map[string][]byte{"test-only.agekey": keyData})
	if err != nil {
		t.Fatal(err)
	}
	return dir, ids
}
