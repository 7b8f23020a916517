package inventory

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/object"
)

// TestUnservedKindIsUnknown: an inventory object whose CRD no longer serves
// its version is unknown, not absent, for prune (the finalizer's path
// included) and orphan: it stays in Remaining, the error says the kind is
// not served, nothing is deleted, and once served again it is pruned. Both
// ways a client learns of it are covered: a RESTMapper that still has the
// kind (the read answers 404) and a fresh one (no match). Checked by
// restoring the old rule (NoMatch and 404 count as absent): the entries
// leave Remaining and the last prune finds nothing to delete.
func TestUnservedKindIsUnknown(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	crd := createCRD(t, nil)
	known := watchClient(t)
	w := createWidget(t, crd, ns, "w", object.OwnerLabels(owner, ns))
	if _, err := getMeta(ctx, known, widgetObject(crd, w).GroupVersionKind(), w.ID); err != nil {
		t.Fatal(err) // the mapper of known now has the kind
	}
	setWidgetServed(t, crd, false)

	for name, c := range map[string]client.WithWatch{"mapper still has the kind": known, "fresh mapper": watchClient(t)} {
		t.Run(name, func(t *testing.T) {
			opts := testOptions(t, ns).ForDeletion()
			opts.MaxShare = 0
			res, err := prune(t, c, New(w), New(), opts)
			if !errors.Is(err, ErrKindNotServed) {
				t.Errorf("prune error %v, want %v", err, ErrKindNotServed)
			}
			if diff := cmp.Diff(map[string]Action{w.ID.String(): ActionUnknown}, actions(res)); diff != "" {
				t.Errorf("prune actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]Entry{w}, res.Remaining.Entries); diff != "" {
				t.Errorf("prune Remaining (-want +got):\n%s", diff)
			}
			res, err = Orphan(ctx, c, New(w), owner, ns)
			if !errors.Is(err, ErrKindNotServed) || res.Count(ActionUnknown) != 1 || !res.Remaining.Has(w.ID) {
				t.Errorf("orphan: %v, %+v; want the Widget unknown and remaining", err, res)
			}
		})
	}

	setWidgetServed(t, crd, true)
	opts := testOptions(t, ns).ForDeletion()
	opts.MaxShare = 0
	res, err := prune(t, known, New(w), New(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]Action{w.ID.String(): ActionPruned}, actions(res)); diff != "" {
		t.Errorf("served again: prune actions (-want +got):\n%s", diff)
	}
}

// setWidgetServed switches the Widget CRD's only version on or off and
// waits until listing Widgets agrees.
func setWidgetServed(t *testing.T, crd testCRD, served bool) {
	t.Helper()
	ctx := context.Background()
	obj := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, clientKey(crd.entry.ID.Name), obj); err != nil {
		t.Fatal(err)
	}
	obj.Spec.Versions[0].Served = served
	if err := env.Client.Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	probe := widgetObject(crd, Entry{ID: object.ID{Namespace: "default", Name: "probe"}})
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, err := kindServed(ctx, watchClient(t), probe.GroupVersionKind(), "default", apierrors.NewNotFound(schema.GroupResource{Group: crd.group, Resource: "widgets"}, "probe"))
		return err == nil && ok == served, nil
	})
	if err != nil {
		t.Fatalf("Widget served=%v never took effect: %v", served, err)
	}
}
