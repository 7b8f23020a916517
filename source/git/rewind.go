package git

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// Descends reports whether ancestor (a full commit SHA) is rev.Commit or an
// ancestor of it: whether moving from ancestor to rev is a fast-forward. It
// walks the local store, which must already hold rev.Commit (Fetch or a
// Cache Get made it so), and deepens the fetch once by
// Options.HistoryDepth commits when the stored history ends before
// deciding. Not found within that depth counts as not an ancestor: the rule
// Fetch uses for Revision.Rewritten, asked here for any earlier commit a
// caller remembers (Rewritten compares with the commit this Fetcher fetched
// last, which a caller sharing the Fetcher may not have applied).
func (f *Fetcher) Descends(ctx context.Context, src Source, rev Revision, ancestor string) (bool, error) {
	want, err := revisionHash(rev)
	if err != nil {
		return false, gitErr(src, "read history", err)
	}
	if len(ancestor) != 40 || !plumbing.IsHash(ancestor) {
		return false, gitErr(src, "read history", fmt.Errorf("commit %q is not a full SHA: %w", ancestor, ErrInvalidSource))
	}
	prev := plumbing.NewHash(ancestor)
	if prev == want {
		return true, nil
	}
	lr, err := f.repo(src)
	if err != nil {
		return false, err
	}
	defer f.done(lr)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if !lr.hasCommit(want) {
		return false, gitErr(src, "read history", fmt.Errorf("commit %s is not fetched", rev.Commit))
	}
	return f.descends(ctx, lr, src, rev, want, prev)
}
