package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// Fetch makes rev.Commit (from Resolve) and every object of its tree present
// in the local object store, fetching only what is missing: a commit fetched
// before costs no network. It returns rev with Previous and Rewritten filled
// in when the branch or tag moved since this Fetcher last fetched it.
//
// The first fetch of a ref is shallow (Options.Depth). Later fetches
// are incremental, like git fetch: the server sends only objects that are
// not reachable from what we have. go-git cannot read thin packs, and a
// shallow request makes git send the whole tree, so the incremental request
// is not shallow; the server may then assume we hold history we do not (a
// revert, a force push), which the tree check catches, falling back to a
// shallow fetch of the complete tree.
func (f *Fetcher) Fetch(ctx context.Context, src Source, rev Revision) (Revision, error) {
	if err := src.Validate(); err != nil {
		return rev, gitErr(src, "fetch", err)
	}
	want, err := revisionHash(rev)
	if err != nil {
		return rev, gitErr(src, "fetch", err)
	}
	lr, err := f.repo(src)
	if err != nil {
		return rev, err
	}
	defer f.done(lr)
	lr.mu.Lock()
	defer lr.mu.Unlock()

	last := lastRefName(src, rev)
	prev := plumbing.ZeroHash
	if last != "" {
		if ref, err := lr.repo.Reference(last, false); err == nil {
			prev = ref.Hash()
		}
	}
	if prev == want {
		return rev, nil // complete: verified when it was recorded
	}
	if err := f.ensureCommit(ctx, lr, src, rev, prev); err != nil {
		return rev, err
	}
	if !prev.IsZero() {
		rev.Previous = prev.String()
		found, err := f.descends(ctx, lr, src, rev, want, prev)
		if err != nil {
			return rev, err
		}
		rev.Rewritten = !found
	}
	if last != "" {
		if err := lr.repo.Storer.SetReference(plumbing.NewHashReference(last, want)); err != nil {
			return rev, gitErr(src, "fetch", err)
		}
	}
	return rev, nil
}

// ensureCommit fetches rev's commit unless it and its whole tree are present.
// base is a commit known to be complete (or zero).
func (f *Fetcher) ensureCommit(ctx context.Context, lr *localRepo, src Source, rev Revision, base plumbing.Hash) error {
	want := plumbing.NewHash(rev.Commit)
	if lr.complete(want, base) {
		return nil
	}
	if !base.IsZero() {
		if err := f.fetchCommit(ctx, lr, src, rev, 0); err == nil && lr.complete(want, base) {
			return nil
		}
	}
	if err := f.fetchCommit(ctx, lr, src, rev, f.opts.Depth); err != nil {
		return err
	}
	if lr.complete(want, base) {
		return nil
	}
	// The server skipped objects it believed a have of ours holds, but an
	// earlier incremental fetch never received them. Start over from an empty
	// store: one full shallow fetch, no haves.
	if err := f.resetRepo(src, lr); err != nil {
		return err
	}
	if err := f.fetchCommit(ctx, lr, src, rev, f.opts.Depth); err != nil {
		return err
	}
	if !lr.complete(want, plumbing.ZeroHash) {
		return gitErr(src, "fetch", fmt.Errorf("%s: objects missing after a full fetch", rev))
	}
	return nil
}

// resetRepo replaces lr's store with an empty one; lr.mu is held.
func (f *Fetcher) resetRepo(src Source, lr *localRepo) error {
	dir := filepath.Join(f.opts.Dir, "repos", repoKey(src.URL))
	closeStore(lr.repo)
	if err := os.RemoveAll(dir); err != nil {
		return gitErr(src, "reset local store", err)
	}
	r, objects, err := f.openStore(dir)
	if err != nil {
		return gitErr(src, "reset local store", err)
	}
	lr.repo, lr.objects = r, objects
	return nil
}

func revisionHash(rev Revision) (plumbing.Hash, error) {
	if len(rev.Commit) != 40 || !plumbing.IsHash(rev.Commit) {
		return plumbing.ZeroHash, fmt.Errorf("revision %q has no full commit: %w", rev.String(), ErrInvalidSource)
	}
	return plumbing.NewHash(rev.Commit), nil
}

// remoteRefName is the full remote reference rev was resolved from, or ""
// for a pinned commit.
func remoteRefName(src Source, rev Revision) plumbing.ReferenceName {
	switch {
	case rev.Ref == "":
		return ""
	case src.Ref.Branch != "":
		return plumbing.NewBranchReferenceName(rev.Ref)
	}
	return plumbing.NewTagReferenceName(rev.Ref)
}

// lastRefName is the local reference remembering the commit last fetched for
// a branch or tag (the "Previous" of the next Fetch); semver picks and pinned
// commits have none, since a different tag is not a rewrite.
func lastRefName(src Source, rev Revision) plumbing.ReferenceName {
	if src.Ref.Semver != "" {
		return ""
	}
	name := remoteRefName(src, rev)
	if name == "" {
		return ""
	}
	return plumbing.ReferenceName("refs/gitsync/last/" + string(name)[len("refs/"):])
}

func (lr *localRepo) hasCommit(h plumbing.Hash) bool {
	_, err := lr.repo.CommitObject(h)
	return err == nil
}

// complete reports whether commit and every object of its tree are stored.
// Subtrees and blobs equal to those of base (a complete commit, or zero) are
// not visited, so the cost follows the size of the change.
func (lr *localRepo) complete(commit, base plumbing.Hash) bool {
	c, err := lr.repo.CommitObject(commit)
	if err != nil {
		return false
	}
	baseTree := plumbing.ZeroHash
	if b, err := lr.repo.CommitObject(base); err == nil {
		baseTree = b.TreeHash
	}
	return lr.treeComplete(c.TreeHash, baseTree)
}

func (lr *localRepo) treeComplete(tree, base plumbing.Hash) bool {
	if tree == base {
		return true
	}
	t, err := lr.repo.TreeObject(tree)
	if err != nil {
		return false
	}
	known := map[string]plumbing.Hash{}
	if bt, err := lr.repo.TreeObject(base); err == nil {
		for _, e := range bt.Entries {
			known[e.Name] = e.Hash
		}
	}
	for _, e := range t.Entries {
		switch {
		case e.Mode == filemode.Submodule || known[e.Name] == e.Hash:
			continue
		case e.Mode == filemode.Dir:
			if !lr.treeComplete(e.Hash, known[e.Name]) {
				return false
			}
		default:
			if lr.repo.Storer.HasEncodedObject(e.Hash) != nil {
				return false
			}
		}
	}
	return true
}

// fetchCommit fetches the wanted commit at the given depth. It asks by ref
// name first (what every server allows), then by SHA (allowed over smart HTTP
// and by most hosts), and for a pinned commit finally fetches all branches.
func (f *Fetcher) fetchCommit(ctx context.Context, lr *localRepo, src Source, rev Revision, depth int) error {
	want := plumbing.NewHash(rev.Commit)
	var errs []error
	if name := remoteRefName(src, rev); name != "" {
		dst := "refs/gitsync/fetched/" + string(name)[len("refs/"):]
		err := f.fetchSpecs(ctx, lr, src, depth, config.RefSpec("+"+string(name)+":"+dst))
		if err == nil && lr.hasCommit(want) {
			return nil
		}
		errs = append(errs, err)
	}
	err := f.fetchSpecs(ctx, lr, src, depth, config.RefSpec(rev.Commit+":refs/gitsync/commits/"+rev.Commit))
	if err == nil && lr.hasCommit(want) {
		return nil
	}
	errs = append(errs, err)
	if src.Ref.Commit != "" {
		err := f.fetchSpecs(ctx, lr, src, 0, "+refs/heads/*:refs/gitsync/fetched/heads/*")
		if err == nil && lr.hasCommit(want) {
			return nil
		}
		errs = append(errs, err)
	}
	cause := errors.Join(errs...)
	if src.Ref.Commit != "" {
		msg := fmt.Sprintf("commit %s not found: no branch of the remote has it, and the server did not serve it by SHA", rev.Commit)
		if cause != nil {
			msg += " (" + tidy(cause.Error()) + ")"
		}
		return gitErr(src, "fetch", &reasonError{class: ErrRefNotFound, reason: v1.ReasonRefNotFound, msg: msg})
	}
	if cause == nil {
		cause = errors.New("the ref moved while fetching; retry")
	}
	return gitErr(src, "fetch", fmt.Errorf("%s at %s: %w", rev.Ref, rev.Commit, cause))
}

func (f *Fetcher) fetchSpecs(ctx context.Context, lr *localRepo, src Source, depth int, specs ...config.RefSpec) error {
	defer lr.fixShallow()
	ctx, cancel := f.withTimeout(ctx)
	defer cancel()
	auth, err := f.transportAuth(src)
	if err != nil {
		return err
	}
	rem := git.NewRemote(lr.repo.Storer, &config.RemoteConfig{Name: "origin", URLs: []string{src.URL}})
	err = rem.FetchContext(ctx, &git.FetchOptions{
		RefSpecs: specs,
		Depth:    depth,
		Auth:     auth,
		CABundle: caData(src.Auth),
		Tags:     git.NoTags,
		Force:    true,
	})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}

// descends reports whether prev is an ancestor of want. When the local
// history ends before deciding, it deepens once by HistoryDepth commits.
func (f *Fetcher) descends(ctx context.Context, lr *localRepo, src Source, rev Revision, want, prev plumbing.Hash) (bool, error) {
	found, truncated := lr.reaches(want, prev)
	if found || !truncated || f.opts.HistoryDepth <= f.opts.Depth {
		return found, nil
	}
	if err := f.fetchCommit(ctx, lr, src, rev, f.opts.HistoryDepth); err != nil {
		return false, err
	}
	found, _ = lr.reaches(want, prev)
	return found, nil
}

// reaches walks the locally present ancestry of from looking for target.
// truncated is true when the walk hit a commit whose parents are not stored
// (a shallow boundary), so "not found" is not yet a proof.
func (lr *localRepo) reaches(from, target plumbing.Hash) (found, truncated bool) {
	seen := map[plumbing.Hash]bool{from: true}
	queue := []plumbing.Hash{from}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h == target {
			return true, false
		}
		c, err := lr.repo.CommitObject(h)
		if err != nil {
			truncated = true
			continue
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false, truncated
}

// fixShallow makes the shallow list say exactly which stored commits lack a
// parent. go-git records boundaries only for shallow requests and never
// removes them, but the server trusts this list (with our haves) to decide
// what we hold: a stale or missing entry means missing or wasted objects.
func (lr *localRepo) fixShallow() {
	refs, err := lr.repo.References()
	if err != nil {
		return
	}
	var queue []plumbing.Hash
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference {
			queue = append(queue, r.Hash())
		}
		return nil
	})
	old, _ := lr.repo.Storer.Shallow()
	queue = append(queue, old...)
	seen := map[plumbing.Hash]bool{}
	var shallow []plumbing.Hash
	for len(queue) > 0 && len(seen) < maxShallowWalk {
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		seen[h] = true
		c, err := lr.repo.CommitObject(h)
		if err != nil {
			continue
		}
		boundary := false
		for _, p := range c.ParentHashes {
			if lr.hasCommit(p) {
				queue = append(queue, p)
			} else {
				boundary = true
			}
		}
		if boundary {
			shallow = append(shallow, h)
		}
	}
	if len(seen) >= maxShallowWalk {
		// Too much history to rescan: keep go-git's list and add what we found.
		shallow = append(shallow, old...)
	}
	_ = lr.repo.Storer.SetShallow(dedupHashes(shallow))
}

// maxShallowWalk bounds the commits fixShallow visits per fetch.
const maxShallowWalk = 20000

func dedupHashes(hs []plumbing.Hash) []plumbing.Hash {
	seen := map[plumbing.Hash]bool{}
	out := hs[:0]
	for _, h := range hs {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}
