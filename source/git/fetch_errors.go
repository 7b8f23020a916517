package git

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/egress"
)

// Classes of fetch failure; an *Error unwraps to at most one of them.
var (
	// ErrRefNotFound: the branch or tag does not exist on the remote (it was
	// deleted or never existed), no tag satisfies the semver range, the
	// pinned commit is not reachable, or the repository is empty. Never
	// reported as an empty result.
	ErrRefNotFound = errors.New("ref not found")
	// errAuthFailed: the remote rejected the credentials, or asked for some
	// and none were sent (Reason tells which).
	errAuthFailed = errors.New("authentication failed")
	// errHostKey: the ssh server's host key is not in known_hosts or differs.
	errHostKey = errors.New("ssh host key not trusted")
	// errRepoNotFound: the remote says the repository does not exist.
	errRepoNotFound = errors.New("repository not found")
	// errHostUnreachable: the host's name does not resolve, or nothing
	// accepts a connection at its address. Usually transient.
	errHostUnreachable = errors.New("host unreachable")
)

// permanentReasons cannot change by retrying the same source with the same
// credentials: something the user set (URL, ref, credentials, known_hosts)
// or the remote's content must change first.
var permanentReasons = map[string]bool{
	v1.ReasonAuthenticationRequired:  true,
	v1.ReasonAuthenticationFailed:    true,
	v1.ReasonCredentialsUnrecognized: true,
	v1.ReasonHostKeyNotTrusted:       true,
	v1.ReasonRepositoryNotFound:      true,
	v1.ReasonRefNotFound:             true,
	v1.ReasonInvalidSource:           true,
}

// Reason returns the reason of the first *Error in err's chain
// (v1.ReasonFetchFailed when it has no known class), or "" when err carries
// none.
func Reason(err error) string {
	var ge *Error
	if !errors.As(err, &ge) {
		return ""
	}
	if ge.Reason == "" {
		return v1.ReasonFetchFailed
	}
	return ge.Reason
}

// IsPermanent reports whether err is a fetch failure that retrying cannot
// fix until the source, its credentials or the remote change: the
// authentication reasons, an untrusted host key, a missing repository or
// ref, or an invalid source.
func IsPermanent(err error) bool {
	return permanentReasons[Reason(err)] || errors.Is(err, ErrInvalidSource)
}

// Error is a failure talking to a Git remote or reading the local copy.
// Its message names the repository with credentials removed and has every
// credential of the Source masked, so it is safe for status and events.
type Error struct {
	// URL is the repository URL, redacted.
	URL string
	// Op is what failed: "list refs", "fetch", "checkout".
	Op string
	// Class is one of the Err* sentinels above, or nil when unclassified
	// (network errors, server errors: usually transient).
	Class error
	// Reason is one of the Reason* constants; see Reason.
	Reason string
	// msg is the cause's message, already redacted.
	msg string
	// ctxErr keeps context cancellation visible to errors.Is.
	ctxErr error
}

// Error formats "repository <url>: <what happened>" for a classified
// failure, whose message says it all, and "repository <url> <op>: <cause>"
// for any other.
func (e *Error) Error() string {
	if e.Class != nil {
		return "repository " + e.URL + ": " + e.msg
	}
	return "repository " + e.URL + " " + e.Op + ": " + e.msg
}

// Unwrap exposes the class, never the raw cause (whose text may quote
// credentials). It is a single error, not a list: an Error is one
// failure, not several joined.
func (e *Error) Unwrap() error { return e.Class }

// Is keeps a context cancellation or deadline of the cause visible to
// errors.Is.
func (e *Error) Is(target error) bool {
	return e.ctxErr != nil && target == e.ctxErr
}

// reasonError is a failure this package classified where it happened: its
// message is complete and is used as the Error's.
type reasonError struct {
	class  error
	reason string
	msg    string
}

func (e *reasonError) Error() string { return e.msg }
func (e *reasonError) Unwrap() error { return e.class }

// gitErr wraps a go-git or I/O error about src into an *Error, classified
// and redacted. A *Error passes through unchanged.
func gitErr(src Source, op string, err error) error {
	if err == nil {
		return nil
	}
	var ge *Error
	if errors.As(err, &ge) {
		return err
	}
	c := classify(src, err)
	e := &Error{
		URL:    RedactURL(src.URL),
		Op:     op,
		Class:  c.class,
		Reason: c.reason,
		msg:    redactSecrets(c.msg, src.Auth.secrets()),
	}
	switch {
	case errors.Is(err, context.Canceled):
		e.ctxErr = context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		e.ctxErr = context.DeadlineExceeded
	}
	return e
}

// classify sorts err (about src) into a class and reason and says in words
// what happened.
func classify(src Source, err error) reasonError {
	msg := err.Error()
	var denied *egress.DeniedError
	var re *reasonError
	switch {
	case errors.As(err, &re):
		return *re
	case errors.As(err, &denied):
		// The operator's policy refused the address: no retry can help.
		return reasonError{ErrInvalidSource, v1.ReasonInvalidSource, tidy(msg)}
	case errors.Is(err, ErrRefNotFound):
		return reasonError{ErrRefNotFound, v1.ReasonRefNotFound, tidy(msg)}
	case errors.Is(err, ErrInvalidSource):
		return reasonError{ErrInvalidSource, v1.ReasonInvalidSource, tidy(msg)}
	case errors.Is(err, errCheckoutTooLarge):
		return reasonError{errCheckoutTooLarge, v1.ReasonFetchFailed, tidy(msg)}
	case errors.Is(err, transport.ErrAuthenticationRequired),
		errors.Is(err, transport.ErrAuthorizationFailed),
		strings.Contains(msg, "unable to authenticate"):
		return authFailure(src, err)
	case strings.Contains(msg, "knownhosts:"), strings.Contains(msg, "host key"):
		return reasonError{errHostKey, v1.ReasonHostKeyNotTrusted, tidy(msg)}
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return repoNotFound(src)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return reasonError{ErrRefNotFound, v1.ReasonRefNotFound, "the repository is empty: it has no branches or tags yet"}
	case strings.Contains(msg, "not our ref"):
		return reasonError{ErrRefNotFound, v1.ReasonRefNotFound, tidy(msg)}
	}
	if why, ok := unreachable(err); ok {
		return reasonError{errHostUnreachable, v1.ReasonHostUnreachable, "host " + hostOf(src.URL) + " unreachable: " + why}
	}
	var ue *plumbing.UnexpectedError
	var he *githttp.Err
	switch {
	case errors.As(err, &ue) && errors.As(ue.Err, &he):
		said := strings.TrimSpace(he.Reason)
		if said == "" || strings.ContainsAny(said, "<\n") || len(said) > 160 {
			said = http.StatusText(he.StatusCode())
		}
		return reasonError{nil, v1.ReasonFetchFailed, fmt.Sprintf("the server answered HTTP %d (%s)", he.StatusCode(), said)}
	case errors.Is(err, context.DeadlineExceeded):
		return reasonError{nil, v1.ReasonFetchFailed, "timed out waiting for the server"}
	}
	return reasonError{nil, v1.ReasonFetchFailed, tidy(msg)}
}

// authFailure tells apart the three ways a remote refuses: credentials sent
// and rejected, a Secret holding none under the keys read, none at all.
func authFailure(src Source, err error) reasonError {
	proto := protocolOf(src.URL)
	status := ""
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired):
		status = "HTTP 401" + serverSays(err.Error(), transport.ErrAuthenticationRequired)
	case errors.Is(err, transport.ErrAuthorizationFailed):
		status = "HTTP 403" + serverSays(err.Error(), transport.ErrAuthorizationFailed)
	}
	if status != "" {
		status = " (" + status + ")"
	}
	if sent := sentCredentials(src); sent != "" {
		return reasonError{errAuthFailed, v1.ReasonAuthenticationFailed,
			"authentication failed: the server rejected " + sent + status}
	}
	if m := src.Auth.missingCredentials(proto); m != "" {
		return reasonError{errAuthFailed, v1.ReasonCredentialsUnrecognized,
			"authentication required, and no credentials were sent" + status + ": " + m}
	}
	return reasonError{errAuthFailed, v1.ReasonAuthenticationRequired,
		"authentication required: the server asked for credentials and none were sent" + status}
}

// sentCredentials says which credentials a request to src carries, or "".
func sentCredentials(src Source) string {
	ep, err := transport.NewEndpoint(src.URL)
	if err != nil {
		return ""
	}
	return src.Auth.sentCredentials(ep.Protocol, ep.Password != "")
}

// repoNotFound says that the URL names no repository the server shows.
func repoNotFound(src Source) reasonError {
	why := "there is no Git repository at this path"
	if proto := protocolOf(src.URL); proto != "file" {
		to := "anonymous requests (no credentials were sent)"
		if sent := sentCredentials(src); sent != "" {
			to = "the credentials sent (" + sent + ")"
		}
		why = "the server has no repository at this URL, or hides it from " + to
	}
	return reasonError{errRepoNotFound, v1.ReasonRepositoryNotFound, "not found: " + why}
}

func protocolOf(rawURL string) string {
	if ep, err := transport.NewEndpoint(rawURL); err == nil {
		return ep.Protocol
	}
	return ""
}

// hostOf is the host (and port, when the URL names one) of a repository URL.
func hostOf(rawURL string) string {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil || ep.Host == "" {
		return "of " + RedactURL(rawURL)
	}
	if ep.Port != 0 {
		return net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	}
	return ep.Host
}

// unreachable reports whether err is a failure to connect (a name that does
// not resolve, a refused or timed-out dial) and why, in the words of the
// network stack without the address it already names.
func unreachable(err error) (string, bool) {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "its name does not resolve (" + dnsErr.Err + ")", true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" && opErr.Err != nil {
		return opErr.Err.Error(), true
	}
	return "", false
}

// serverSays is ": <text>" when a Git server gave a refusal (go-git's
// "<sentinel>: <text>") a short line of plain text, else "".
func serverSays(msg string, sentinel error) string {
	_, said, ok := strings.Cut(msg, sentinel.Error()+": ")
	said = strings.TrimSpace(said)
	if !ok || said == "" || strings.ContainsAny(said, "<\n") || len(said) > 160 {
		return ""
	}
	return ": " + said
}

// tidy makes a library's message one line without a dangling colon: go-git
// ends some errors with ": " and an empty server reason.
func tidy(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimRight(strings.TrimSpace(l), ":"); l != "" {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, "; ")
}
