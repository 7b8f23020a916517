package git

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"gitsync.dev/gitsync/internal/gittest"
)

// TestSignedKeepsFetchHistory: reading a revision's signed objects before
// the cache fetches it leaves Fetch's memory alone, so the Fetch after it
// still reports the previous commit of the branch.
//
// Checked: with Signed moving the last-fetched reference, Previous is
// empty.
func TestSignedKeepsFetchHistory(t *testing.T) {
	root := t.TempDir()
	r := gittest.NewRepo(t, filepath.Join(root, "repo"))
	srv := gittest.New(t, root, gittest.Options{})
	f := newTestFetcher(t)
	ctx := context.Background()
	src := Source{URL: srv.URL + "/repo", Ref: Ref{Branch: "main"}}
	first := r.Commit("one", map[string]string{"a": "1"})
	rev, err := f.Resolve(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(ctx, src, rev); err != nil {
		t.Fatal(err)
	}
	second := r.Commit("two", map[string]string{"a": "2"})
	if rev, err = f.Resolve(ctx, src); err != nil {
		t.Fatal(err)
	}
	s, err := f.Signed(ctx, src, rev, false)
	if err != nil {
		t.Fatal(err)
	}
	if s.Commit.Hash.String() != second || s.Tag != nil {
		t.Fatalf("Signed gave commit %s and tag %v, want %s alone", s.Commit.Hash, s.Tag, second)
	}
	got, err := f.Fetch(ctx, src, rev)
	if err != nil {
		t.Fatal(err)
	}
	if got.Previous != first {
		t.Errorf("Fetch after Signed: Previous %q, want %s", got.Previous, first)
	}
}

// TestSignedTag: the annotated tag object a tag ref names is read (fetched
// by its ref when the commit is already stored), a lightweight tag is
// ErrLightweightTag, and a branch ref has no tag to give.
func TestSignedTag(t *testing.T) {
	root := t.TempDir()
	r := gittest.NewRepo(t, filepath.Join(root, "repo"))
	srv := gittest.New(t, root, gittest.Options{})
	f := newTestFetcher(t)
	ctx := context.Background()
	url := srv.URL + "/repo"
	commit := r.Commit("one", map[string]string{"a": "1"})
	r.TagAnnotated("v1.0.0")
	r.Tag("v1.0.1")
	branch := Source{URL: url, Ref: Ref{Branch: "main"}}
	rev, err := f.Resolve(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(ctx, branch, rev); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Signed(ctx, branch, rev, true); !errors.Is(err, ErrInvalidSource) {
		t.Errorf("tag of a branch: %v, want an invalid source", err)
	}
	for tag, want := range map[string]error{"v1.0.0": nil, "v1.0.1": ErrLightweightTag} {
		src := Source{URL: url, Ref: Ref{Tag: tag}}
		rev, err := f.Resolve(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.Signed(ctx, src, rev, true)
		if want != nil {
			if !errors.Is(err, want) || !strings.Contains(err.Error(), tag) {
				t.Errorf("tag %s: %v, want %v naming it", tag, err, want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("tag %s: %v", tag, err)
		}
		if s.Tag == nil || s.Tag.Name != tag || s.Tag.Target.String() != commit || s.Commit.Hash.String() != commit {
			t.Errorf("tag %s: got tag %+v of commit %s, want the annotated tag of %s", tag, s.Tag, s.Commit.Hash, commit)
		}
	}
}
