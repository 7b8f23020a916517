package inventory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/object"
)

// TestBlockedDeletionStaysAndIsRetried: an object whose foreign finalizer
// outlives the timeout is reported failed and stays in Remaining; once the
// finalizer goes, the next prune finishes it.
func TestBlockedDeletionStaysAndIsRetried(t *testing.T) {
	ns := env.Namespace(t)
	c := watchClient(t)
	ctx := context.Background()
	anchor := ours(t, ns, "anchor")
	held := createCM(t, ns, "held", object.OwnerLabels(owner, ns), nil, "example.com/hold")
	t.Cleanup(func() { removeFinalizers(t, held) })
	opts := testOptions(t, ns)
	opts.Timeout = 2 * time.Second
	desired := New(anchor)

	res, err := prune(t, c, New(anchor, held), desired, opts)
	var objErr *ObjectError
	if !errors.Is(err, ErrNotGone) || !errors.As(err, &objErr) || objErr.ID != held.ID {
		t.Fatalf("Execute error = %v, want an ObjectError for %s wrapping ErrNotGone", err, held.ID)
	}
	if got := actions(res)[held.ID.String()]; got != ActionFailed {
		t.Errorf("action = %q, want failed", got)
	}
	if got := reasons(res)[held.ID.String()]; !strings.Contains(got, "example.com/hold") {
		t.Errorf("reason %q does not name the finalizer", got)
	}
	if diff := cmp.Diff([]Entry{anchor, held}, res.Remaining.Entries); diff != "" {
		t.Errorf("Remaining (-want +got):\n%s", diff)
	}

	// The retry with the remaining inventory: the object is still being
	// deleted (it has a deletionTimestamp) and goes once released.
	plan, err := Plan(ctx, c, res.Remaining, desired, opts)
	if err != nil || len(plan.Deletions) != 1 {
		t.Fatalf("retry plan: %v, deletions %v; want 1 deletion", err, plan)
	}
	removeFinalizers(t, held)
	res, err = plan.Execute(ctx, c)
	if err != nil {
		t.Fatalf("retry Execute: %v", err)
	}
	if got := actions(res)[held.ID.String()]; got != ActionPruned && got != ActionAbsent {
		t.Errorf("retry action = %q, want pruned or absent", got)
	}
	if diff := cmp.Diff(desired.Entries, res.Remaining.Entries); diff != "" {
		t.Errorf("Remaining after retry (-want +got):\n%s", diff)
	}
}

func removeFinalizers(t *testing.T, e Entry) {
	t.Helper()
	obj := &corev1.ConfigMap{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ID.Namespace, Name: e.ID.Name}, obj)
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	obj.Finalizers = nil
	if err := env.Client.Update(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// TestForbiddenDeletionStaysAndIsRetried: an account that may read but not
// delete fails the prune; the object stays in Remaining and an account that
// may delete prunes it on the retry.
func TestForbiddenDeletionStaysAndIsRetried(t *testing.T) {
	ns := env.Namespace(t)
	anchor, stale := ours(t, ns, "anchor"), ours(t, ns, "stale")
	reader := readOnlyClient(t, ns)
	opts := testOptions(t, ns)
	desired := New(anchor)

	res, err := prune(t, reader, New(anchor, stale), desired, opts)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("Execute as a reader = %v, want Forbidden", err)
	}
	if got := actions(res)[stale.ID.String()]; got != ActionFailed || !exists(t, stale) {
		t.Errorf("as a reader: action %q, exists %v; want failed and present", got, exists(t, stale))
	}
	if diff := cmp.Diff([]Entry{anchor, stale}, res.Remaining.Entries); diff != "" {
		t.Errorf("Remaining (-want +got):\n%s", diff)
	}

	res, err = prune(t, watchClient(t), res.Remaining, desired, opts)
	if err != nil {
		t.Fatalf("retry Execute: %v", err)
	}
	if got := actions(res)[stale.ID.String()]; got != ActionPruned || exists(t, stale) {
		t.Errorf("retry: action %q, exists %v; want pruned and gone", got, exists(t, stale))
	}
}

// readOnlyClient impersonates a user who may get, list and watch
// ConfigMaps in ns, and nothing else.
func readOnlyClient(t *testing.T, ns string) client.WithWatch {
	t.Helper()
	ctx := context.Background()
	user := "reader-" + ns
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme, Mapper: watchClient(t).RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
