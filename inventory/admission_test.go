package inventory

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/object"
)

// TestAdmissionDeniedDeletionStaysAndIsRetried: a ValidatingAdmissionPolicy
// that denies the DELETE fails the prune; the object stays in Remaining and
// is pruned by the retry once the policy is gone.
func TestAdmissionDeniedDeletionStaysAndIsRetried(t *testing.T) {
	ns := env.Namespace(t)
	c := watchClient(t)
	anchor := ours(t, ns, "anchor")
	labels := object.OwnerLabels(owner, ns)
	labels[testenv.ProtectLabel] = "yes"
	protected := createCM(t, ns, "protected", labels, nil)
	policy := env.DenyProtectedDeletes(t, ns)
	opts := testOptions(t, ns)
	desired := New(anchor)

	res, err := prune(t, c, New(anchor, protected), desired, opts)
	if err == nil || actions(res)[protected.ID.String()] != ActionFailed || !exists(t, protected) {
		t.Fatalf("denied prune: error %v, action %q, exists %v; want an error, failed, present",
			err, actions(res)[protected.ID.String()], exists(t, protected))
	}
	if diff := cmp.Diff([]Entry{anchor, protected}, res.Remaining.Entries); diff != "" {
		t.Errorf("Remaining (-want +got):\n%s", diff)
	}

	policy.Lift(t)
	res, err = prune(t, c, res.Remaining, desired, opts)
	if err != nil {
		t.Fatalf("retry Execute: %v", err)
	}
	if got := actions(res)[protected.ID.String()]; got != ActionPruned || exists(t, protected) {
		t.Errorf("retry: action %q, exists %v; want pruned and gone", got, exists(t, protected))
	}
}
