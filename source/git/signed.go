package git

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Signed holds the objects of a revision that carry its signatures, as
// stored: decoded by go-git from their exact bytes, so the payload a
// signature covers is the one the object's hash covers.
type Signed struct {
	// Commit is the revision's commit.
	Commit *object.Commit
	// Tag is the annotated tag the revision's ref names; nil unless asked
	// for. Its target is Commit.
	Tag *object.Tag
}

// ErrLightweightTag: the tag asked for points at the commit directly, so
// there is no tag object to carry a signature.
var ErrLightweightTag = errors.New("lightweight tag")

// Signed makes rev's commit (and, with tag, the annotated tag object rev.Ref
// names) present in the local store and returns them. It leaves the
// reference Fetch remembers the last commit of a ref by untouched, so a
// later Fetch still reports Previous and Rewritten. The tag object is
// taken from the store when it is there and targets rev.Commit, else
// fetched by its ref; a tag that moved meanwhile is an error to retry, and
// a lightweight tag is an error wrapping ErrLightweightTag (any other error
// is a *Error of the fetch).
func (f *Fetcher) Signed(ctx context.Context, src Source, rev Revision, tag bool) (Signed, error) {
	if err := src.Validate(); err != nil {
		return Signed{}, gitErr(src, "fetch", err)
	}
	want, err := revisionHash(rev)
	if err != nil {
		return Signed{}, gitErr(src, "fetch", err)
	}
	if tag && (src.Ref.Branch != "" || remoteRefName(src, rev) == "") {
		return Signed{}, gitErr(src, "fetch", fmt.Errorf("%s names no tag: %w", rev, ErrInvalidSource))
	}
	lr, err := f.repo(src)
	if err != nil {
		return Signed{}, err
	}
	defer f.done(lr)
	lr.mu.Lock()
	defer lr.mu.Unlock()

	base := plumbing.ZeroHash
	if last := lastRefName(src, rev); last != "" {
		if ref, err := lr.repo.Reference(last, false); err == nil {
			base = ref.Hash()
		}
	}
	if err := f.ensureCommit(ctx, lr, src, rev, base); err != nil {
		return Signed{}, err
	}
	c, err := lr.repo.CommitObject(want)
	if err != nil {
		return Signed{}, gitErr(src, "fetch", fmt.Errorf("%s: commit unreadable after fetch: %w", rev, err))
	}
	out := Signed{Commit: c}
	if !tag {
		return out, nil
	}
	if out.Tag, err = f.tagObject(ctx, lr, src, rev); err != nil {
		return Signed{}, err
	}
	return out, nil
}

// tagObject returns the annotated tag object rev.Ref names, fetching its
// ref when the store has no tag object of that name targeting rev.Commit.
func (f *Fetcher) tagObject(ctx context.Context, lr *localRepo, src Source, rev Revision) (*object.Tag, error) {
	name := plumbing.NewTagReferenceName(rev.Ref)
	local := plumbing.ReferenceName("refs/gitsync/fetched/" + string(name)[len("refs/"):])
	if t, err := lr.storedTag(local, rev.Commit); err == nil {
		return t, nil
	}
	if err := f.fetchSpecs(ctx, lr, src, f.opts.Depth, config.RefSpec("+"+string(name)+":"+string(local))); err != nil {
		return nil, gitErr(src, "fetch", fmt.Errorf("tag %s: %w", rev.Ref, err))
	}
	t, err := lr.storedTag(local, rev.Commit)
	if errors.Is(err, ErrLightweightTag) {
		return nil, fmt.Errorf("tag %s is a %w: it carries no signature", rev.Ref, err)
	}
	if err != nil {
		return nil, gitErr(src, "fetch", fmt.Errorf("tag %s: %w", rev.Ref, err))
	}
	return t, nil
}

// storedTag reads the tag object the local reference points at and checks
// that it targets commit.
func (lr *localRepo) storedTag(local plumbing.ReferenceName, commit string) (*object.Tag, error) {
	ref, err := lr.repo.Reference(local, true)
	if err != nil {
		return nil, err
	}
	if ref.Hash().String() == commit {
		return nil, ErrLightweightTag
	}
	t, err := lr.repo.TagObject(ref.Hash())
	if err != nil {
		return nil, err
	}
	if t.TargetType != plumbing.CommitObject || t.Target.String() != commit {
		return nil, fmt.Errorf("the tag object targets %s %s, not the commit resolved (%s); the tag moved, retry", t.TargetType, t.Target, commit)
	}
	return t, nil
}
