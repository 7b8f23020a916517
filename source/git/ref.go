package git

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5/plumbing"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/versions"
)

// Ref selects what to follow in a repository. Exactly one field is set.
type Ref struct {
	// Branch follows the tip of refs/heads/<Branch>.
	Branch string
	// Tag pins refs/tags/<Tag>; annotated tags are peeled to their commit.
	Tag string
	// Semver follows the highest tag that satisfies a semver range such as
	// ">=1.2.0 <2.0.0" or "~1.4"; a leading "v" on tag names is accepted.
	Semver string
	// Commit pins one full 40-hex commit SHA.
	Commit string
}

// Validate reports an error unless exactly one field is set and well formed.
func (r Ref) Validate() error {
	set := 0
	for _, v := range []string{r.Branch, r.Tag, r.Semver, r.Commit} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("ref %s invalid: exactly one of branch, tag, semver or commit must be set: %w", r, ErrInvalidSource)
	}
	switch {
	case r.Branch != "":
		return validRefName("branch", plumbing.NewBranchReferenceName(r.Branch))
	case r.Tag != "":
		return validRefName("tag", plumbing.NewTagReferenceName(r.Tag))
	case r.Semver != "":
		if _, err := semver.NewConstraint(r.Semver); err != nil {
			return fmt.Errorf("ref %s invalid: %v: %w", r, err, ErrInvalidSource)
		}
	case r.Commit != "":
		if len(r.Commit) != 40 || !plumbing.IsHash(r.Commit) {
			return fmt.Errorf("ref %s invalid: commit must be a full 40-hex SHA-1: %w", r, ErrInvalidSource)
		}
	}
	return nil
}

func validRefName(kind string, name plumbing.ReferenceName) error {
	if err := name.Validate(); err != nil {
		return fmt.Errorf("%s %q invalid: %v: %w", kind, name.Short(), err, ErrInvalidSource)
	}
	return nil
}

// String renders the ref the way it appears in a Revision: "main",
// "tag:v1.2.0", "semver:~1.2", "commit:<sha>".
func (r Ref) String() string {
	switch {
	case r.Branch != "":
		return r.Branch
	case r.Tag != "":
		return "tag:" + r.Tag
	case r.Semver != "":
		return "semver:" + r.Semver
	case r.Commit != "":
		return "commit:" + r.Commit
	}
	return "<empty>"
}

// ErrInvalidSource: a Source or Ref is malformed; retrying cannot help until
// the spec changes.
var ErrInvalidSource = errors.New("invalid source")

// remoteRefs is the result of listing a remote: reference name → commit,
// with annotated tags already peeled.
type remoteRefs map[plumbing.ReferenceName]plumbing.Hash

// newRemoteRefs indexes a listing, preferring peeled "^{}" entries so that an
// annotated tag maps to its commit rather than to the tag object.
func newRemoteRefs(list []*plumbing.Reference) remoteRefs {
	out := make(remoteRefs, len(list))
	peeled := map[plumbing.ReferenceName]bool{}
	for _, r := range list {
		if r.Type() != plumbing.HashReference {
			continue
		}
		name := string(r.Name())
		if base, ok := strings.CutSuffix(name, "^{}"); ok {
			out[plumbing.ReferenceName(base)] = r.Hash()
			peeled[plumbing.ReferenceName(base)] = true
			continue
		}
		if !peeled[r.Name()] {
			out[r.Name()] = r.Hash()
		}
	}
	return out
}

// pick resolves ref against the listing: the full reference name that was
// chosen and its commit. A missing branch or tag, or a semver range that no
// tag satisfies, is ErrRefNotFound.
func (rr remoteRefs) pick(ref Ref) (plumbing.ReferenceName, plumbing.Hash, error) {
	var name plumbing.ReferenceName
	switch {
	case ref.Branch != "":
		name = plumbing.NewBranchReferenceName(ref.Branch)
	case ref.Tag != "":
		name = plumbing.NewTagReferenceName(ref.Tag)
	case ref.Semver != "":
		tag, err := rr.highestTag(ref.Semver)
		if err != nil {
			return "", plumbing.ZeroHash, err
		}
		name = plumbing.NewTagReferenceName(tag)
	case ref.Commit != "":
		return "", plumbing.NewHash(ref.Commit), nil
	}
	h, ok := rr[name]
	if !ok {
		return "", plumbing.ZeroHash, &reasonError{class: ErrRefNotFound, reason: v1.ReasonRefNotFound,
			msg: fmt.Sprintf("%s %q not found", refKind(name), name.Short())}
	}
	return name, h, nil
}

// highestTag returns the name of the highest tag satisfying the range.
// Ties between "v1.0.0" and "1.0.0" go to the lexically smaller name so the
// choice is stable.
func (rr remoteRefs) highestTag(rng string) (string, error) {
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return "", fmt.Errorf("semver range %q invalid: %v: %w", rng, err, ErrInvalidSource)
	}
	var tags []string
	for name := range rr {
		if name.IsTag() {
			tags = append(tags, name.Short())
		}
	}
	i := versions.Highest(tags, c, nil)
	if i < 0 {
		return "", &reasonError{class: ErrRefNotFound, reason: v1.ReasonRefNotFound,
			msg: fmt.Sprintf("no tag satisfies semver range %q", rng)}
	}
	return tags[i], nil
}

func refKind(name plumbing.ReferenceName) string {
	if name.IsTag() {
		return "tag"
	}
	return "branch"
}

// maxListedRefs bounds the names a RefNotFound message lists.
const maxListedRefs = 10

// existing says what the remote has that ref could have named: for a
// branch, up to maxListedRefs branch names and the default branch; for a
// tag or semver range, up to maxListedRefs tags, highest versions first.
func (rr remoteRefs) existing(ref Ref, defaultBranch string) string {
	if ref.Branch == "" && ref.Tag == "" && ref.Semver == "" {
		return ""
	}
	tags := ref.Branch == ""
	var names []string
	for name := range rr {
		if (tags && name.IsTag()) || (!tags && name.IsBranch()) {
			names = append(names, name.Short())
		}
	}
	kind := "branches"
	if tags {
		kind = "tags"
		sortVersionsFirst(names)
	} else {
		sort.Strings(names)
	}
	if len(names) == 0 {
		return "the remote has no " + kind
	}
	listed := names[:min(len(names), maxListedRefs)]
	s := "the remote has " + kind + " " + strings.Join(listed, ", ")
	if more := len(names) - len(listed); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	if !tags && defaultBranch != "" {
		s += " (default " + defaultBranch + ")"
	}
	return s
}

// sortVersionsFirst orders tag names by semantic version, highest first,
// then the names that are not versions alphabetically.
func sortVersionsFirst(names []string) {
	version := func(s string) *semver.Version {
		v, err := semver.NewVersion(s)
		if err != nil {
			return nil
		}
		return v
	}
	sort.Slice(names, func(i, j int) bool {
		vi, vj := version(names[i]), version(names[j])
		switch {
		case vi != nil && vj != nil && !vi.Equal(vj):
			return vi.GreaterThan(vj)
		case (vi == nil) != (vj == nil):
			return vi != nil
		}
		return names[i] < names[j]
	})
}
