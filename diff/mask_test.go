package diff_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/diff"
)

// TestMask reads testdata/mask/*.yaml: an input object and the masked
// object Mask must return.
func TestMask(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "mask", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no mask fixtures: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			objs := loadObjects(t, path)
			if len(objs) != 2 {
				t.Fatalf("%d documents, want input and want", len(objs))
			}
			input, want := objs[0], objs[1]
			before := input.DeepCopy()

			got := diff.Mask(input)
			if d := cmp.Diff(want.Object, got.Object); d != "" {
				t.Errorf("Mask mismatch (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before.Object, input.Object); d != "" {
				t.Errorf("Mask changed its input (-before +after):\n%s", d)
			}
		})
	}
	if diff.Mask(nil) != nil {
		t.Error("Mask(nil) != nil")
	}
}
