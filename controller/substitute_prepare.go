package controller

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/diff"
	"gitsync.dev/gitsync/source/sops"
)

// prepare turns the shared render into gs's own objects: its variables
// substituted (substitute.go), then its SOPS files decrypted (decrypt.go).
// The render cache is shared by every GitSync of a repository path, so
// neither step writes to it: changed objects are copies, kept only for
// this sync. The returned redactor hides the values from Secrets and the
// decrypted ones in the sync's error. Decryption runs after substitution,
// so a decrypted value (a password holding "${") is never expanded.
func (r *GitSyncReconciler) prepare(ctx context.Context, gs *v1.GitSync, objs []*unstructured.Unstructured, files sops.Files) ([]*unstructured.Unstructured, redactor, error) {
	objs, fromSecrets, err := r.substitute(ctx, gs, objs)
	if err != nil {
		return nil, nil, err
	}
	objs, decrypted, err := r.decrypt(ctx, gs, objs, files)
	if err != nil {
		return nil, nil, err
	}
	return objs, newRedactor(append(fromSecrets, decrypted...)), nil
}

// redactor replaces values that must not be shown in text built by others
// (an apiserver message quoting an invalid value of a ConfigMap that took a
// Secret's variable, or a decrypted value) by diff.MaskValue, longest first.
type redactor []string

// minRedacted is the shortest value searched for.
const minRedacted = 4

func newRedactor(values []string) redactor {
	// Shorter values would blank out common words; they are left alone.
	values = slices.DeleteFunc(values, func(v string) bool { return len(v) < minRedacted })
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(values)
}

func (h redactor) text(s string) string {
	for _, v := range h {
		s = strings.ReplaceAll(s, v, diff.MaskValue)
	}
	return s
}

// scrub redacts out's error, keeping its classification.
func (h redactor) scrub(out *outcome) {
	if len(h) == 0 || out.err == nil || h.text(out.err.Error()) == out.err.Error() {
		return
	}
	se := asSyncError(out.err, v1.ReasonApplyFailed)
	out.err = &syncError{Reason: se.Reason, Stalled: se.Stalled, Err: redactedError{err: se.Err, text: h.text(se.Err.Error())}}
}

// redactedError is an error with values removed from its text; errors.Is
// and errors.As still see the original.
type redactedError struct {
	err  error
	text string
}

func (e redactedError) Error() string { return e.text }
func (e redactedError) Unwrap() error { return e.err }
