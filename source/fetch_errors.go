package source

import (
	"context"
	"errors"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"gitsync.dev/gitsync/internal/egress"
)

// Classes of fetch failure; a *GitError unwraps to at most one of them.
var (
	// ErrRefNotFound: the branch or tag does not exist on the remote (it was
	// deleted or never existed), no tag satisfies the semver range, or the
	// pinned commit is not reachable. Never reported as an empty result.
	ErrRefNotFound = errors.New("ref not found")
	// ErrAuthFailed: the remote rejected the credentials, or asked for some.
	ErrAuthFailed = errors.New("authentication failed")
	// ErrHostKey: the ssh server's host key is not in known_hosts or differs.
	ErrHostKey = errors.New("ssh host key not trusted")
	// ErrRepoNotFound: the remote says the repository does not exist.
	ErrRepoNotFound = errors.New("repository not found")
)

// GitError is a failure talking to a Git remote or reading the local copy.
// Its message names the repository with credentials removed and has every
// credential of the Source masked, so it is safe for status and events.
type GitError struct {
	// URL is the repository URL, redacted.
	URL string
	// Op is what failed: "list refs", "fetch", "checkout".
	Op string
	// Class is one of the Err* sentinels above, or nil when unclassified
	// (network errors, server errors: usually transient).
	Class error
	// msg is the cause's message, already redacted.
	msg string
	// ctxErr keeps context cancellation visible to errors.Is.
	ctxErr error
}

// Error formats "repository <url> <op>: <cause>".
func (e *GitError) Error() string {
	return "repository " + e.URL + " " + e.Op + ": " + e.msg
}

// Unwrap exposes the class and any context error, never the raw cause (whose
// text may quote credentials).
func (e *GitError) Unwrap() []error {
	var out []error
	if e.Class != nil {
		out = append(out, e.Class)
	}
	if e.ctxErr != nil {
		out = append(out, e.ctxErr)
	}
	return out
}

// gitErr wraps a go-git or I/O error about src into a *GitError, classified
// and redacted. A *GitError passes through unchanged.
func gitErr(src Source, op string, err error) error {
	if err == nil {
		return nil
	}
	var ge *GitError
	if errors.As(err, &ge) {
		return err
	}
	e := &GitError{
		URL:   RedactURL(src.URL),
		Op:    op,
		Class: gitErrClass(err),
		msg:   redactSecrets(err.Error(), src.Auth.secrets()),
	}
	switch {
	case errors.Is(err, context.Canceled):
		e.ctxErr = context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		e.ctxErr = context.DeadlineExceeded
	}
	return e
}

func gitErrClass(err error) error {
	msg := err.Error()
	var denied *egress.DeniedError
	switch {
	case errors.As(err, &denied):
		// The operator's policy refused the address: no retry can help.
		return ErrInvalidSource
	case errors.Is(err, ErrRefNotFound):
		return ErrRefNotFound
	case errors.Is(err, ErrInvalidSource):
		return ErrInvalidSource
	case errors.Is(err, ErrCheckoutTooLarge):
		return ErrCheckoutTooLarge
	case errors.Is(err, transport.ErrAuthenticationRequired),
		errors.Is(err, transport.ErrAuthorizationFailed),
		strings.Contains(msg, "unable to authenticate"):
		return ErrAuthFailed
	case strings.Contains(msg, "knownhosts:"), strings.Contains(msg, "host key"):
		return ErrHostKey
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return ErrRepoNotFound
	case strings.Contains(msg, "not our ref"):
		return ErrRefNotFound
	}
	return nil
}
