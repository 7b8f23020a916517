package controller

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/cluster"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/livecache"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/render"
)

// syncError is a failed sync with the condition reason it is reported
// under. Stalled failures cannot be fixed by retrying the same spec and
// revision: they are reported and not retried until one of them changes.
// The others are returned to the work queue for a retry with backoff.
type syncError struct {
	Reason  string
	Stalled bool
	Err     error
}

func (e *syncError) Error() string { return e.Err.Error() }
func (e *syncError) Unwrap() error { return e.Err }

func stalled(reason string, err error) error {
	return &syncError{Reason: reason, Stalled: true, Err: err}
}

func retry(reason string, err error) error {
	return &syncError{Reason: reason, Err: err}
}

// asSyncError returns err as a *syncError; an unclassified error is a
// retryable failure under reason.
func asSyncError(err error, reason string) *syncError {
	var se *syncError
	if errors.As(err, &se) {
		return se
	}
	return &syncError{Reason: reason, Err: err}
}

// classifyFetch sorts a source.Cache failure: a malformed source or a commit
// that does not render is permanent, and so is a remote that refuses the
// credentials, has no such repository or no such ref (Stalled under the
// source's reason: retried at spec.interval, and at once when the spec or
// the credentials Secret changes); anything else about reaching the remote
// (an unreachable host, a server error, a timeout) is retried with backoff.
func classifyFetch(err error) error {
	var re *render.Error
	var se *syncError
	var ae *chartrepo.AuthError
	var tl *chartrepo.TooLargeError
	var alias *chartrepo.AliasError
	var unverified *chartrepo.UnverifiedError
	switch {
	case errors.As(err, &se):
		return err // classified already
	case errors.As(err, &unverified):
		return stalled(v1.ReasonVerificationFailed, err)
	case errors.As(err, &ae) && ae.Anonymous:
		// Retried, not Stalled: the Secret may be added at any moment.
		return retry(v1.ReasonAuthenticationRequired, err)
	case errors.As(err, &ae):
		return retry(v1.ReasonAuthenticationFailed, err)
	case errors.As(err, &tl):
		return stalled(v1.ReasonRenderFailed, err)
	case errors.As(err, &alias):
		return stalled(v1.ReasonInvalidSpec, err)
	case errors.Is(err, git.ErrInvalidSource):
		return stalled(v1.ReasonInvalidSpec, err)
	case errors.As(err, &re):
		return stalled(v1.ReasonRenderFailed, err)
	case git.IsPermanent(err):
		return stalled(git.Reason(err), withFetchHint(err))
	case git.Reason(err) == v1.ReasonHostUnreachable:
		return retry(v1.ReasonHostUnreachable, err)
	default:
		return retry(v1.ReasonFetchFailed, err)
	}
}

// withFetchHint adds to a permanent fetch failure the spec field or Secret
// that fixes it, where the source's message cannot know it.
func withFetchHint(err error) error {
	switch git.Reason(err) {
	case v1.ReasonAuthenticationRequired:
		return fmt.Errorf("%w; set spec.source.secretRef to a Secret with keys %s and %s, or %s (https), or %s and %s (ssh)", err,
			git.SecretKeyUsername, git.SecretKeyPassword, git.SecretKeyBearerToken, git.SecretKeyIdentity, git.SecretKeyKnownHosts)
	case v1.ReasonRepositoryNotFound:
		return fmt.Errorf("%w; check spec.source.url", err)
	}
	return err
}

// classifyApply sorts a failed apply: when every failed object failed for a
// reason retrying cannot fix (RBAC, schema validation, a field another
// manager owns, an immutable field) the sync is stalled; a failure of the
// whole run or of any object for a transient reason is retried.
func classifyApply(cs *apply.ChangeSet, runErr error) error {
	var we *apply.WaveError
	if errors.As(runErr, &we) { // an invalid gitsync.dev/wave: nothing applied
		return stalled(v1.ReasonRenderFailed, runErr)
	}
	if runErr != nil {
		return retry(v1.ReasonApplyFailed, runErr)
	}
	failed := cs.Failed()
	if len(failed) == 0 {
		if len(cs.Skipped()) > 0 {
			// Kinds not served yet: their CRD may come from another
			// GitSync, so try again; the set is not applied meanwhile.
			return retry(v1.ReasonApplyFailed, cs.Err())
		}
		return nil
	}
	reason := v1.ReasonApplyFailed
	for _, e := range failed {
		if !permanentAPIError(e.Err) {
			return retry(reason, cs.Err())
		}
		var oe *apply.OwnerConflictError
		switch {
		case apierrors.IsForbidden(e.Err):
			reason = v1.ReasonForbidden
		case errors.As(e.Err, &oe):
			reason = v1.ReasonOwnerConflict
		}
	}
	return stalled(reason, cs.Err())
}

// permanentAPIError reports whether an object-level apiserver error will
// repeat with the same request.
func permanentAPIError(err error) bool {
	var ce *apply.ConflictError
	var ie *apply.ImmutableError
	var oe *apply.OwnerConflictError
	switch {
	case err == nil:
		return false
	case errors.As(err, &ce), errors.As(err, &ie), errors.As(err, &oe):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return false
	}
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err) || apierrors.IsRequestEntityTooLargeError(err)
}

// classifyPrune sorts a prune failure: a refused plan (empty render, prune
// limit) is permanent for this revision, a failed delete is retried.
func classifyPrune(err error) error {
	var re *inventory.RefusedError
	if errors.As(err, &re) {
		if errors.Is(err, inventory.ErrPruneLimit) {
			err = fmt.Errorf("%w; if the removal is intended, annotate the GitSync %s=1 for this sync", err, v1.AnnotationPruneMaxShare)
		}
		return stalled(v1.ReasonPruneFailed, err)
	}
	return retry(v1.ReasonPruneFailed, err)
}

// classifyKinds sorts a failure to make the revision's kinds readable into
// the agent's watch cache: a refusal (RBAC) is permanent, anything else is
// retried.
func classifyKinds(err error) error {
	var fe *livecache.ForbiddenError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return stalled(v1.ReasonForbidden, err)
	}
	return retry(v1.ReasonApplyFailed, err)
}

// classifyTarget sorts a failure to reach gs's target cluster: a refused or
// malformed kubeconfig is permanent until its Secret changes; anything else
// (the Secret unreadable, the remote not answering) is retried.
func classifyTarget(err error) error {
	var ke *cluster.KubeconfigError
	var se *syncError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return err // the kubeconfig Secret's read, classified already
	case errors.As(err, &ke):
		return stalled(v1.ReasonInvalidSpec, err)
	}
	return retry(v1.ReasonApplyFailed, err)
}
