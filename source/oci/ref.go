package oci

import (
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
)

// Scheme is the URL scheme of an OCI repository.
const Scheme = "oci://"

// ErrInvalid marks a repository URL or Ref that cannot name an artifact.
var ErrInvalid = errors.New("invalid OCI reference")

// IsURL reports whether u names an OCI repository (oci://…).
func IsURL(u string) bool { return strings.HasPrefix(u, Scheme) }

// Ref selects one artifact of a repository; exactly one field is set.
type Ref struct {
	// Tag is a tag such as "v1.2.0" or "latest".
	Tag string
	// Semver follows the highest tag satisfying a range such as "~1.2".
	Semver string
	// Digest is a manifest digest, "sha256:<hex>".
	Digest string
}

// String is the Ref as "tag:v1", "semver:~1" or "digest:sha256:…".
func (r Ref) String() string {
	switch {
	case r.Tag != "":
		return "tag:" + r.Tag
	case r.Semver != "":
		return "semver:" + r.Semver
	case r.Digest != "":
		return "digest:" + r.Digest
	}
	return "none"
}

// Validate checks that exactly one field is set and that it parses.
func (r Ref) Validate() error {
	n := 0
	for _, v := range []string{r.Tag, r.Semver, r.Digest} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("ref %s: exactly one of tag, semver or digest must be set: %w", r, ErrInvalid)
	}
	switch {
	case r.Tag != "":
		if _, err := name.NewTag("example.invalid/x:"+r.Tag, name.StrictValidation); err != nil {
			return fmt.Errorf("tag %q: %w", r.Tag, ErrInvalid)
		}
	case r.Semver != "":
		if _, err := semver.NewConstraint(r.Semver); err != nil {
			return fmt.Errorf("semver range %q: %v: %w", r.Semver, err, ErrInvalid)
		}
	case r.Digest != "":
		if _, err := name.NewDigest("example.invalid/x@"+r.Digest, name.StrictValidation); err != nil {
			return fmt.Errorf("digest %q: %w", r.Digest, ErrInvalid)
		}
	}
	return nil
}

// Artifact is a repository and the Ref selecting one of its artifacts.
type Artifact struct {
	// URL is "oci://registry/repository".
	URL string
	Ref Ref
}

// ParseReference splits a reference as a user types it after oci://
// ("oci://reg/repo:tag" or "oci://reg/repo@sha256:…") into an Artifact;
// with neither a tag nor a digest, Ref is zero.
func ParseReference(s string) (Artifact, error) {
	if !IsURL(s) {
		return Artifact{}, fmt.Errorf("%q: want oci://REGISTRY/REPOSITORY[:TAG|@DIGEST]: %w", s, ErrInvalid)
	}
	rest := strings.TrimPrefix(s, Scheme)
	a := Artifact{}
	if i := strings.Index(rest, "@"); i >= 0 {
		rest, a.Ref.Digest = rest[:i], rest[i+1:]
	} else if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		rest, a.Ref.Tag = rest[:i], rest[i+1:]
	}
	a.URL = Scheme + rest
	if _, err := a.repository(false); err != nil {
		return Artifact{}, err
	}
	if a.Ref != (Ref{}) {
		if err := a.Ref.Validate(); err != nil {
			return Artifact{}, err
		}
	}
	return a, nil
}

// repository parses URL; plainHTTP lets the library speak HTTP to it.
func (a Artifact) repository(plainHTTP bool) (name.Repository, error) {
	if !IsURL(a.URL) {
		return name.Repository{}, fmt.Errorf("%q: want oci://REGISTRY/REPOSITORY: %w", a.URL, ErrInvalid)
	}
	rest := strings.TrimPrefix(a.URL, Scheme)
	if !strings.Contains(rest, "/") {
		// Without a slash the library would take the name for a Docker
		// Hub repository; an artifact's URL names its registry.
		return name.Repository{}, fmt.Errorf("%q: want oci://REGISTRY/REPOSITORY (the registry's host, then the repository): %w", a.URL, ErrInvalid)
	}
	opts := []name.Option{name.StrictValidation}
	if plainHTTP {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(rest, opts...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("%q: %v: %w", a.URL, err, ErrInvalid)
	}
	return repo, nil
}

// Revision is what a Ref resolved to.
type Revision struct {
	// Tag is the tag followed, empty for a digest Ref.
	Tag string
	// Digest is the manifest's digest, "sha256:<hex>".
	Digest string
}

// String is "v1.2.0@sha256:<hex>", or the digest alone without a tag: the
// form Flux gives an artifact's revision.
func (r Revision) String() string {
	if r.Tag == "" {
		return r.Digest
	}
	return r.Tag + "@" + r.Digest
}
