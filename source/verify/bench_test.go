package verify_test

import (
	"context"
	"testing"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/verify"
)

// BenchmarkVerify is what a sync pays to verify a revision signed with
// OpenPGP: the first time (keys parsed, objects read from the local store,
// signature checked) and every later time (a digest of the Secret's data
// and a memo lookup).
func BenchmarkVerify(b *testing.B) {
	alice := gittest.NewGPGKey(b, "Alice <alice@example.com>")
	r := newRemote(b)
	r.CommitSigned("signed", map[string]string{"a.yaml": "a: 1\n"}, alice)
	src := git.Source{URL: r.url, Ref: git.Ref{Branch: "main"}}
	ctx := context.Background()
	rev, err := r.f.Resolve(ctx, src)
	if err != nil {
		b.Fatal(err)
	}
	p := policy(v1.VerifyHEAD, map[string]string{"alice.asc": alice.Public})
	if _, err := verify.NewVerifier(0).Verify(ctx, r.f, src, rev, p); err != nil {
		b.Fatal(err) // fetched once: the store holds the commit from now on
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			if _, err := verify.NewVerifier(1).Verify(ctx, r.f, src, rev, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("remembered", func(b *testing.B) {
		v := verify.NewVerifier(0)
		for b.Loop() {
			if _, err := v.Verify(ctx, r.f, src, rev, p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
