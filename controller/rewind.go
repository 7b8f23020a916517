package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/git"
)

// rewind is a branch or tag that now points at a commit which does not
// descend from the one this GitSync applied last: a force push, a reset
// back to an older commit, a re-tag. It is applied like any revision (the
// prune rails decide what may go), but said out loud.
type rewind struct {
	ref, from, to string
}

func (w *rewind) String() string {
	return fmt.Sprintf("%s was rewritten from %s to %s, which does not descend from it", w.ref, short(w.from), short(w.to))
}

func short(commit string) string { return commit[:min(len(commit), 12)] }

// rewindMemo remembers the last comparison of one GitSync, so the history
// walk and the Warning event happen once per rewind, not once per retry.
type rewindMemo struct {
	from, to string
	found    *rewind
}

// rewindOf compares rev with the revision gs applied last. On a rewind it
// records a Warning event (once per rewind) and returns it, so status can
// say so; otherwise nil. Failing to decide (the deepening fetch failed) is
// logged and treated as no rewind: it never fails a sync.
func (r *GitSyncReconciler) rewindOf(ctx context.Context, gs *v1.GitSync, st *syncState, src git.Source, rev git.Revision) *rewind {
	last, ok := git.ParseRevision(gs.Status.LastAppliedRevision)
	ref, from := last.Ref, last.Commit
	// An artifact's tag moving to any digest is how artifacts are
	// published: there is no history to be rewritten.
	if !ok || rev.IsArtifact() || last.IsArtifact() || ref == "" || ref != rev.Ref || from == rev.Commit {
		return nil
	}
	st.mu.Lock()
	memo := st.rewind
	st.mu.Unlock()
	if memo.from == from && memo.to == rev.Commit {
		return memo.found
	}
	descends, err := r.opts.Fetcher.Descends(ctx, src, rev, from)
	if err != nil {
		log.FromContext(ctx).Info("could not tell whether the branch was rewritten", "ref", ref, "from", from, "to", rev.Commit, "error", err.Error())
		return nil
	}
	memo = rewindMemo{from: from, to: rev.Commit}
	if !descends {
		kind := "branch"
		if src.Ref.Tag != "" {
			kind = "tag"
		}
		memo.found = &rewind{ref: kind + " " + ref, from: from, to: rev.Commit}
		r.recorder.Eventf(gs, nil, corev1.EventTypeWarning, v1.ReasonRewritten, "Fetch", "%s; objects only in %s are pruned as usual",
			memo.found, short(from))
	}
	st.mu.Lock()
	st.rewind = memo
	st.mu.Unlock()
	return memo.found
}

// readyCondition is Ready's reason and message after a successful sync:
// Rewritten while the revision applied is one a rewind led to, else
// Succeeded. The reason stays on later syncs of the same revision (the
// condition itself remembers it, so a restart keeps it too) and gives way
// when another revision is applied.
func readyCondition(s *v1.GitSyncStatus, out *outcome) (reason, message string) {
	message = "Applied revision " + out.applied
	if out.rewind != nil {
		return v1.ReasonRewritten, message + " (" + out.rewind.String() + ")"
	}
	prev := meta.FindStatusCondition(s.Conditions, v1.ConditionReady)
	if prev != nil && prev.Status == metav1.ConditionTrue && prev.Reason == v1.ReasonRewritten && strings.HasPrefix(prev.Message, message+" (") {
		return v1.ReasonRewritten, prev.Message
	}
	return v1.ReasonSucceeded, message
}
