package source

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
)

// Fetch makes rev.Commit (from Resolve) present in the local object store,
// fetching only when it is missing: a commit fetched before costs no network.
// It returns rev with Previous and Rewritten filled in when the branch or tag
// moved since this Fetcher last fetched it.
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
	lr.mu.Lock()
	defer lr.mu.Unlock()

	if !lr.hasCommit(want) {
		if err := f.fetchCommit(ctx, lr, src, rev, f.opts.Depth); err != nil {
			return rev, err
		}
	}
	last := lastRefName(src, rev)
	if last == "" {
		return rev, nil
	}
	if prev, err := lr.repo.Reference(last, false); err == nil && prev.Hash() != want {
		rev.Previous = prev.Hash().String()
		found, err := f.descends(ctx, lr, src, rev, want, prev.Hash())
		if err != nil {
			return rev, err
		}
		rev.Rewritten = !found
	}
	if err := lr.repo.Storer.SetReference(plumbing.NewHashReference(last, want)); err != nil {
		return rev, gitErr(src, "fetch", err)
	}
	return rev, nil
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
		return gitErr(src, "fetch", fmt.Errorf("commit %s: %w", rev.Commit, errors.Join(ErrRefNotFound, cause)))
	}
	if cause == nil {
		cause = errors.New("the ref moved while fetching; retry")
	}
	return gitErr(src, "fetch", fmt.Errorf("%s at %s: %w", rev.Ref, rev.Commit, cause))
}

func (f *Fetcher) fetchSpecs(ctx context.Context, lr *localRepo, src Source, depth int, specs ...config.RefSpec) error {
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
