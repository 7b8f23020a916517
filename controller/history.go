package controller

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
	"gitsync.dev/gitsync/redact"
)

// recordHistory adds out to s.History when it ends on a revision or an
// outcome other than the newest entry's: a converged GitSync, or one
// failing the same way again, changes nothing (no status write). A sync
// still waiting for health, held by its dependencies or yielding records
// nothing until it ends.
func recordHistory(s *v1.GitSyncStatus, out *outcome, now time.Time) {
	if out.attempted == "" || out.waiting != "" || out.yielded {
		return
	}
	result := v1.HistorySucceeded
	if se := out.syncErr(); se != nil {
		result = se.Reason
	} else if out.applied == "" {
		return
	}
	var head *v1.HistoryEntry
	if len(s.History) > 0 {
		head = &s.History[0]
	}
	if head != nil && head.Revision == out.attempted && head.Outcome == result {
		return
	}
	digest := ""
	if head != nil && head.Revision == out.attempted {
		digest = head.Digest // the same revision again: its objects are known
	}
	if digest == "" {
		digest = objectsDigest(out.objs, out.red)
	}
	e := v1.HistoryEntry{Revision: out.attempted, Digest: digest, Time: metav1.NewTime(now).Rfc3339Copy(),
		Duration: metav1.Duration{Duration: out.took.Round(time.Millisecond)}, Outcome: result}
	s.History = append([]v1.HistoryEntry{e}, s.History[:min(len(s.History), v1.MaxHistory-1)]...)
}

// objectsDigest is "sha256:<hex>" of objs in ID order, each as JSON with
// a Secret's data left out and every value red knows masked, so the digest
// tells nothing of a Secret-born value (a hash of a short one could be
// guessed). "" when nothing rendered.
func objectsDigest(objs []*unstructured.Unstructured, red *redact.Redactor) string {
	if len(objs) == 0 {
		return ""
	}
	sorted := slices.Clone(objs)
	slices.SortFunc(sorted, func(a, b *unstructured.Unstructured) int {
		return cmp.Compare(object.IDOf(a).String(), object.IDOf(b).String())
	})
	h := sha256.New()
	for _, o := range sorted {
		if o.GetKind() == "Secret" && o.GroupVersionKind().Group == "" {
			o = o.DeepCopy()
			delete(o.Object, "data")
			delete(o.Object, "stringData")
		}
		b, err := json.Marshal(o.Object)
		if err != nil {
			continue
		}
		text := string(b)
		if red != nil && red.Len() > 0 {
			text = red.String(text)
		}
		h.Write([]byte(text))
		h.Write([]byte{'\n'})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
