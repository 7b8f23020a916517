package controller

import (
	"sync"
	"time"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/git"
)

// syncState is what the reconciler remembers about one GitSync between
// reconciles, only to avoid repeating work: the last resolved revision (so a
// drift-triggered reconcile does not ask the remote again), the last
// permanent failure (so a broken commit is not fetched and rendered again),
// and the resourceVersions its own writes superseded (so a stale cache read
// is recognised).
type syncState struct {
	mu sync.Mutex

	src        git.Source
	rev        git.Revision
	art        *artifactSource // how rev is read when it is an OCI artifact's
	resolvedAt time.Time
	generation int64
	requested  string
	fetchNow   bool
	fetchAt    time.Time // when fetchNow was last set

	stalledGen    int64
	stalledCommit string
	stalledErr    error

	superseded map[string]bool

	rewind rewindMemo

	wait healthWait
}

func (s *syncState) markFetch(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.fetchNow || at.After(s.fetchAt) {
		s.fetchAt = at
	}
	s.fetchNow = true
}

// needsResolve reports whether the remote must be asked for its revision:
// never asked, asked for an older spec, asked too long ago, or told to.
func (s *syncState) needsResolve(gs *v1.GitSync, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resolvedAt.IsZero() || s.fetchNow ||
		s.generation != gs.Generation ||
		s.requested != gs.Annotations[v1.AnnotationRequestedAt] ||
		now.Sub(s.resolvedAt) >= intervalOf(gs)
}

// resolved records a fresh resolve; the fetch mark is cleared only by the
// resolve that started after it was set.
func (s *syncState) resolved(gs *v1.GitSync, src git.Source, rev git.Revision, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.src, s.rev, s.resolvedAt = src, rev, at
	s.generation, s.requested = gs.Generation, gs.Annotations[v1.AnnotationRequestedAt]
}

// takeFetchMark clears the fetch mark and returns from when a resolve's
// answer is fresh enough for gs (remote.Resolver): after the mark or the
// requested-at annotation's time when either asked for it, else any answer
// asked within shareFor. A mark takes any answer asked after it (that
// answer saw the push the mark announces), up to one interval old: the
// GitSyncs of one webhook, queued behind each other for longer than
// shareFor, still share one ls-remote.
func (s *syncState) takeFetchMark(gs *v1.GitSync, now time.Time, shareFor time.Duration) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	notBefore := now.Add(-shareFor)
	if s.fetchNow {
		notBefore = later(now.Add(-intervalOf(gs)), s.fetchAt)
	}
	if gs.Status.ObservedGeneration != gs.Generation && (s.resolvedAt.IsZero() || s.generation != gs.Generation) {
		// A spec this agent has not applied (a new GitSync, an edit): it
		// was likely written right after the push it is for, which a
		// shared answer from a moment ago would not show ("path not
		// found" until the next interval), even one a webhook's mark
		// would take. An agent's restart, where the spec was applied
		// before, still shares.
		notBefore = later(notBefore, now)
	}
	if req := gs.Annotations[v1.AnnotationRequestedAt]; req != s.requested {
		notBefore = later(notBefore, requestedAt(req, now))
	}
	s.fetchNow = false
	return notBefore
}

// setArtifact records how the artifact just resolved is read.
func (s *syncState) setArtifact(a *artifactSource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.art = a
}

// artifact is how the last resolved artifact is read; nil before one was.
func (s *syncState) artifact() *artifactSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.art
}

func (s *syncState) last() (git.Source, git.Revision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src, s.rev
}

// stalledOn returns the remembered permanent failure for this generation
// and commit, if any.
func (s *syncState) stalledOn(gen int64, commit string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalledErr != nil && s.stalledGen == gen && s.stalledCommit == commit {
		return s.stalledErr
	}
	return nil
}

func (s *syncState) setStalled(gen int64, commit string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalledGen, s.stalledCommit, s.stalledErr = gen, commit, err
}

// wrote records that a write replaced resourceVersion rv.
func (s *syncState) wrote(rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.superseded == nil {
		s.superseded = map[string]bool{}
	}
	s.superseded[rv] = true
}

// staleRead reports whether rv is one our own writes replaced; a read of
// anything else means the cache caught up, and the record is dropped.
func (s *syncState) staleRead(rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.superseded[rv] {
		return true
	}
	s.superseded = nil
	return false
}

// waitingSince returns when the wait for commit under generation gen began:
// now for a revision or spec not waited on before (which also ends the
// wait of the one before it).
func (s *syncState) waitingSince(commit string, gen int64, now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wait.commit != commit || s.wait.gen != gen || s.wait.since.IsZero() {
		s.wait = healthWait{commit: commit, gen: gen, since: now}
	}
	return s.wait.since
}

// endWait forgets the wait: the revision became ready, so a later lapse
// starts a new wait rather than counting from this one.
func (s *syncState) endWait() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wait = healthWait{}
}

// requestedAt reads a requested-at annotation's time (RequestReconcile
// writes RFC 3339), at most now: a forwarded webhook then shares the
// answer of a resolve asked after it. A value that is not a time (a user's
// `kubectl annotate` with any string) asks for an answer from now.
func requestedAt(v string, now time.Time) time.Time {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil || t.After(now) {
		return now
	}
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
