package render_test

import (
	"context"
	"errors"
	"fmt"

	"gitsync.dev/gitsync/source/render"
)

// Render a kustomize overlay from a checkout and list what it produced.
func ExampleRender() {
	r, err := render.Render(context.Background(), "testdata/render", "kustomize/overlays/prod", render.DefaultOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range r.Objects {
		fmt.Println(o.GetKind(), o.GetNamespace(), o.GetName())
	}
	// Output:
	// ConfigMap prod prod-web-config-2g9k859fk4
	// Service prod prod-web
	// Deployment prod prod-web
}

// Callers branch on the class of a render failure with errors.Is.
func ExampleError() {
	_, err := render.Render(context.Background(), "testdata/render", "../..", render.DefaultOptions())
	fmt.Println(errors.Is(err, render.ErrOutsideRoot))
	fmt.Println(err)
	// Output:
	// true
	// ../..: path leaves the repository root
}
