package apply

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

// OwnerConflictError says the live object belongs to another sync: its owner
// labels name another GitSync or CLI inventory. Such an object is never
// applied, adopted or relabelled; handing it over is an explicit act (see
// "Hand an object to another owner" in docs/guides/pruning.md).
type OwnerConflictError struct {
	// Subject is the object, "Kind/namespace/name".
	Subject string
	// Owner is the sync the live object's labels name.
	Owner object.Owner
}

func (e *OwnerConflictError) Error() string {
	return fmt.Sprintf("%s is owned by %s: not applied (an object has one owner; remove it from %s first to hand it over)",
		e.Subject, e.Owner, e.Owner)
}

// ownerConflict returns an *OwnerConflictError when live carries another
// sync's owner labels than the ones this Applier stamps. Without OwnerLabels
// (a CLI apply without --name) nothing is claimed and nothing conflicts; an
// unlabelled live object is free to adopt.
func (a *Applier) ownerConflict(subject string, live *unstructured.Unstructured) error {
	if live == nil || len(a.opts.OwnerLabels) == 0 {
		return nil
	}
	other, owned := object.OwnerOf(live.GetLabels())
	me, _ := object.OwnerOf(a.opts.OwnerLabels)
	if !owned || other == me || a.recordedLegacy(live, me, other) {
		return nil
	}
	return &OwnerConflictError{Subject: subject, Owner: other}
}

// recordedLegacy reports whether live is a CLI inventory's object labelled
// before the owner-kind label existed (it then reads as the GitSync of the
// same name) that the inventory recorded with this very UID.
func (a *Applier) recordedLegacy(live *unstructured.Unstructured, me, other object.Owner) bool {
	if !me.CLI || other != object.GitSyncOwner(me.Namespace, me.Name) {
		return false
	}
	if _, hasKind := live.GetLabels()[v1.LabelOwnerKind]; hasKind {
		return false
	}
	uid := a.opts.Recorded.UID(object.IDOf(live))
	return uid != "" && uid == live.GetUID()
}
