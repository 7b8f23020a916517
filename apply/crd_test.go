package apply_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"gitsync.dev/gitsync/apply"
)

// TestWaitServed: a kind discovery serves is found at once; one it never
// serves ends the bounded wait with a NotServedError naming the kind, a
// NoMatch inside.
func TestWaitServed(t *testing.T) {
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(env.Config, hc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := apply.WaitServed(ctx, mapper, schema.GroupKind{Group: "apps", Kind: "Deployment"}, time.Minute, "v1"); err != nil {
		t.Errorf("Deployment: %v", err)
	}
	never := schema.GroupKind{Group: "never.example.com", Kind: "Nothing"}
	err = apply.WaitServed(ctx, mapper, never, 300*time.Millisecond)
	var ns *apply.NotServedError
	if !errors.As(err, &ns) || ns.Kind != never || !meta.IsNoMatchError(err) {
		t.Fatalf("WaitServed(%s) = %v, want a NotServedError for it wrapping a NoMatch", never, err)
	}
	if want := "kind Nothing.never.example.com not served by discovery"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
}
