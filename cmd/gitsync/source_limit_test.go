package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	sourcerender "gitsync.dev/gitsync/source/render"
)

// TestSourceMaxObjects: diff and apply read --max-objects (default the
// agent's 10,000) and refuse a directory that renders more objects, naming
// the cap and the flag; at the cap the directory renders.
//
// Checked by making renderOptions ignore MaxObjects: the "over the flag"
// case then renders all three objects and fails.
func TestSourceMaxObjects(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 3 {
		fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm%d\n---\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"default cap", nil, ""},
		{"at the flag", []string{"--max-objects=3"}, ""},
		{"over the flag", []string{"--max-objects=2"}, "more than 2 objects: the cap is 2 objects per revision (--max-objects)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &sourceOptions{}
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if err := o.Complete([]string{dir}); err != nil {
				t.Fatal(err)
			}
			got, err := o.Render(context.Background())
			if tt.wantErr == "" {
				if err != nil || len(got.Objects) != 3 {
					t.Fatalf("render = %v, %v; want 3 objects", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, sourcerender.ErrObjectLimit) {
				t.Fatalf("render error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
