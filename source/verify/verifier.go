package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/utils/lru"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/git"
)

// Error is a verdict: the revision (or the keys) will not verify until the
// revision or the keys change. Its message names the revision, the object
// and why, never key material.
type Error struct {
	// Revision is the revision refused, in Revision.String() form; empty
	// when the keys themselves were refused.
	Revision string
	// Why says what failed.
	Why string
}

func (e *Error) Error() string {
	if e.Revision == "" {
		return "verification failed: " + e.Why
	}
	return "revision " + e.Revision + " failed verification: " + e.Why
}

// refusal is a verdict about one object, before the revision is known.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error { return &refusal{msg: fmt.Sprintf(format, args...)} }

// Policy is what a revision must satisfy.
type Policy struct {
	// Mode says which objects must be signed; empty is v1.VerifyHEAD.
	Mode v1.VerificationMode
	// Origin names the keys' Secret in messages: "Secret/NS/NAME".
	Origin string
	// Keys is the Secret's data (see ParseKeys).
	Keys map[string][]byte
}

// wants reports which objects p verifies.
func (p Policy) wants() (commit, tag bool) {
	switch p.Mode {
	case v1.VerifyTag:
		return false, true
	case v1.VerifyTagAndHEAD:
		return true, true
	}
	return true, false
}

// Check reports whether p can apply to a source following ref: a mode that
// verifies a tag needs ref.tag or ref.semver. The error wraps
// git.ErrInvalidSource.
func (p Policy) Check(ref git.Ref) error {
	switch p.Mode {
	case "", v1.VerifyHEAD:
		return nil
	case v1.VerifyTag, v1.VerifyTagAndHEAD:
		if ref.Tag == "" && ref.Semver == "" {
			return fmt.Errorf("verify mode %s needs ref.tag or ref.semver (the ref is %s): %w", p.Mode, ref, git.ErrInvalidSource)
		}
		return nil
	}
	return fmt.Errorf("verify mode %q invalid: want HEAD, Tag or TagAndHEAD: %w", p.Mode, git.ErrInvalidSource)
}

// Result lists who signed the objects verified, tag first.
type Result []Signer

// String joins the signers with "; ", as status shows them.
func (r Result) String() string {
	parts := make([]string, len(r))
	for i, s := range r {
		parts[i] = s.String()
	}
	return strings.Join(parts, "; ")
}

// Objects gives the signed objects of a revision; *git.Fetcher is one.
type Objects interface {
	Signed(ctx context.Context, src git.Source, rev git.Revision, tag bool) (git.Signed, error)
}

var _ Objects = (*git.Fetcher)(nil)

// Verifier verifies revisions and remembers its verdicts. It is safe for
// concurrent use.
type Verifier struct {
	mu   sync.Mutex
	memo *lru.Cache // memoKey → verdict
}

type verdict struct {
	res Result
	err error
}

// DefaultMemoSize is how many verdicts a Verifier keeps: more than the
// revisions an agent follows at once.
const DefaultMemoSize = 4096

// NewVerifier returns a Verifier keeping size verdicts (DefaultMemoSize
// when size is not positive).
func NewVerifier(size int) *Verifier {
	if size <= 0 {
		size = DefaultMemoSize
	}
	return &Verifier{memo: lru.New(size)}
}

// Verify checks rev of src against p and returns who signed it, or an
// *Error. A verdict is remembered per (URL, commit, tag, mode, digest of
// p.Keys), so only the first call for a revision and keys reads objects;
// a failure to read them (any other error) is returned as it is and not
// remembered.
func (v *Verifier) Verify(ctx context.Context, objs Objects, src git.Source, rev git.Revision, p Policy) (Result, error) {
	if err := p.Check(src.Ref); err != nil {
		return nil, err
	}
	commit, tag := p.wants()
	key := memoKey(rev, p, tag)
	v.mu.Lock()
	got, ok := v.memo.Get(key)
	v.mu.Unlock()
	if ok {
		vd := got.(verdict)
		return vd.res, vd.err
	}
	res, err := verify(ctx, objs, src, rev, p, commit, tag)
	var verr *Error
	if err == nil || errors.As(err, &verr) {
		v.mu.Lock()
		v.memo.Add(key, verdict{res: res, err: err})
		v.mu.Unlock()
	}
	return res, err
}

func memoKey(rev git.Revision, p Policy, tag bool) string {
	t := ""
	if tag {
		t = rev.Ref
	}
	return strings.Join([]string{rev.URL, rev.Commit, t, string(p.Mode), Digest(p.Keys)}, "\x00")
}

// verify is one verification, without memory.
func verify(ctx context.Context, objs Objects, src git.Source, rev git.Revision, p Policy, commit, tag bool) (Result, error) {
	keys, err := ParseKeys(p.Origin, p.Keys)
	if err != nil {
		return nil, err
	}
	signed, err := objs.Signed(ctx, src, rev, tag)
	if errors.Is(err, git.ErrLightweightTag) {
		return nil, &Error{Revision: rev.String(), Why: err.Error() + "; mode " + string(p.Mode) + " needs an annotated, signed tag"}
	}
	if err != nil {
		return nil, err
	}
	var res Result
	check := func(s Signer, err error) error {
		var r *refusal
		if errors.As(err, &r) {
			return &Error{Revision: rev.String(), Why: r.msg + " (keys from " + p.Origin + ")"}
		}
		if err != nil {
			return err
		}
		res = append(res, s)
		return nil
	}
	if tag {
		if err := check(keys.verifyTag(signed.Tag)); err != nil {
			return nil, err
		}
	}
	if commit {
		if err := check(keys.verifyCommit(signed.Commit)); err != nil {
			return nil, err
		}
	}
	return res, nil
}
