package diff_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/diff"
)

// TestUnified reads testdata/unified/NAME.yaml (before and after objects; an
// empty document is nil) and compares Unified's text with NAME.diff.
func TestUnified(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "unified", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no unified fixtures: %v", err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			objs := loadObjects(t, path)
			if len(objs) != 2 {
				t.Fatalf("%d documents, want before and after", len(objs))
			}
			got := diff.Unified("Kind/demo/"+name, objs[0], objs[1])
			golden := strings.TrimSuffix(path, ".yaml") + ".diff"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("golden (run with -update to create): %v", err)
			}
			if d := cmp.Diff(string(want), got); d != "" {
				t.Errorf("Unified mismatch (-want +got):\n%s", d)
			}
			for _, secret := range []string{"hunter2", "aHVudGVyMg", "Y29ycmVjdC1ob3JzZQ", "c2VjcmV0LXRva2Vu", "b2xk", "bmV3"} {
				if strings.Contains(got, secret) {
					t.Errorf("Secret value %q in diff:\n%s", secret, got)
				}
			}
		})
	}
}
