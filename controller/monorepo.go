package controller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/git"
)

// revisionNews remembers, per repository and ref, the newest commit a
// reconcile resolved, so the first reconcile to see a commit ranks the
// GitSyncs waiting for it (changed paths first) once, not each of them.
type revisionNews struct {
	mu     sync.Mutex
	latest map[string]string                              // newsKey → commit
	queue  priorityqueue.PriorityQueue[reconcile.Request] // nil: not a priority queue
}

// newsSource gives the ranking a way into the work queue.
func (r *GitSyncReconciler) newsSource() crsource.Source {
	return crsource.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		n := &r.news
		n.mu.Lock()
		defer n.mu.Unlock()
		n.queue, _ = q.(priorityqueue.PriorityQueue[reconcile.Request])
		return nil
	})
}

// newsKey names a repository and ref: GitSyncs that share it resolve to
// the same commit.
func newsKey(gs *v1.GitSync) string {
	ref := gs.Spec.Source.Ref
	return git.NormalizeRepoURL(gs.Spec.Source.URL) + "\x00" + ref.Branch + "\x00" + ref.Tag + "\x00" + ref.Semver + "\x00" + ref.Commit
}

// learn records commit as the newest of key and reports whether it was
// news (no reconcile had resolved it before).
func (n *revisionNews) learn(key, commit string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.latest == nil {
		n.latest = map[string]string{}
	}
	if n.latest[key] == commit {
		return false
	}
	n.latest[key] = commit
	return true
}

// raise queues keys at priorityChanged (raising them if they wait at a
// lower priority), for one run (settle), and reports whether the queue
// could rank them.
func (n *revisionNews) raise(keys []types.NamespacedName) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.queue == nil || len(keys) == 0 {
		return false
	}
	reqs := make([]reconcile.Request, len(keys))
	for i, k := range keys {
		reqs[i] = reconcile.Request{NamespacedName: k}
	}
	n.queue.AddWithOpts(priorityqueue.AddOpts{Priority: new(priorityChanged)}, reqs...)
	return true
}

// yieldToChanged is called by a sync that resolved rev and fetched it.
// When rev is news for gs's repository and ref, it raises the GitSyncs
// waiting for it whose content rev changed, and reports whether gs should
// step aside for them: its own content did not change (its render was
// a cache hit), so it only has its new revision to write, which can wait.
// It never decides what is applied, only in which order: a wrong guess
// costs latency, nothing else, so anything unsure counts as changed.
func (r *GitSyncReconciler) yieldToChanged(ctx context.Context, gs *v1.GitSync, src git.Source, rev git.Revision) bool {
	if rev.IsArtifact() || rev.Chart != "" { // one artifact, one GitSync's content: nothing to rank; a chart may move without a commit
		return false
	}
	if !r.news.learn(newsKey(gs), rev.Commit) {
		return false
	}
	changed := r.changedWaiting(ctx, gs, src, rev.Commit)
	if !r.news.raise(changed) {
		return false
	}
	return !r.contentChanged(src, gs, rev.Commit)
}

// changedWaiting returns the GitSyncs other than gs that follow its
// repository and ref, wait for a fresh look at the remote (a webhook or
// another trigger marked them) and whose content commit changes. Content
// keys are read in batches (one per old commit, one for commit), so
// ranking 500 GitSyncs reads each tree of the two commits once.
func (r *GitSyncReconciler) changedWaiting(ctx context.Context, gs *v1.GitSync, src git.Source, commit string) []types.NamespacedName {
	self, key := client.ObjectKeyFromObject(gs), newsKey(gs)
	var out []types.NamespacedName
	byOld := map[string][]rankItem{}
	var all []rankItem
	for _, k := range r.waitingForFetch() {
		if k == self {
			continue
		}
		sib := &v1.GitSync{}
		if err := r.client.Get(ctx, k, sib); err != nil || newsKey(sib) != key || sib.Spec.Suspend {
			continue
		}
		old := commitOf(sib.Status.LastAppliedRevision)
		switch {
		case old == commit: // already there
		case unsure(sib):
			out = append(out, k)
		default:
			it := rankItem{key: k, path: git.Source{Path: sib.Spec.Source.Path}.CleanPath(), index: len(all)}
			all = append(all, it)
			byOld[old] = append(byOld[old], it)
		}
	}
	if len(all) == 0 {
		return out
	}
	after, err := r.opts.Fetcher.ContentKeys(src, commit, pathsOf(all))
	for old, items := range byOld {
		var before []string
		if err == nil {
			before, _ = r.opts.Fetcher.ContentKeys(src, old, pathsOf(items))
		}
		for i, it := range items {
			if before == nil || before[i] != after[it.index] {
				out = append(out, it.key)
			}
		}
	}
	return out
}

// rankItem is a GitSync whose content is compared: its path, and its
// place in the batch for the new commit.
type rankItem struct {
	key   types.NamespacedName
	path  string
	index int
}

func pathsOf(items []rankItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.path
	}
	return out
}

// waitingForFetch returns the GitSyncs whose fetch mark is set: a trigger
// queued them and their reconcile has not asked the remote yet.
func (r *GitSyncReconciler) waitingForFetch() []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []types.NamespacedName
	for k, st := range r.states {
		st.mu.Lock()
		if st.fetchNow {
			out = append(out, k)
		}
		st.mu.Unlock()
	}
	return out
}

// contentChanged reports whether what gs renders from src may differ
// between its last applied revision and commit (which must be fetched):
// their content keys (git.Fetcher.ContentKey, which already counts a
// kustomization, a symlink, a chart or an ignore file as reading the whole
// repository) differ. No applied revision, a spec not applied yet, a last
// attempt that failed (the new revision may be its fix; stepping aside
// would also reset its backoff) or an unreadable tree count as changed.
func (r *GitSyncReconciler) contentChanged(src git.Source, gs *v1.GitSync, commit string) bool {
	if unsure(gs) {
		return true
	}
	before, err := r.opts.Fetcher.ContentKey(src, commitOf(gs.Status.LastAppliedRevision))
	if err != nil {
		return true
	}
	after, err := r.opts.Fetcher.ContentKey(src, commit)
	return err != nil || before != after
}

// unsure reports whether gs's last applied revision says too little to
// compare content with: none yet, a spec not applied yet, or a last
// attempt that failed.
func unsure(gs *v1.GitSync) bool {
	return gs.Status.LastAppliedRevision == "" || gs.Status.ObservedGeneration != gs.Generation ||
		gs.Status.LastAttemptedRevision != gs.Status.LastAppliedRevision
}
