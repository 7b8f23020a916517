package v1alpha1

// Every condition type and reason gitsync reports, on a GitSync's
// conditions and in its Events, lives here (CamelCase, as Kubernetes
// condition reasons are). Naming rule: Reason followed by the reason's own
// text where they agree; the value is what users match on, so values never
// change.

// Condition types and reasons of a GitSync, following kstatus conventions:
// Ready is the summary, Reconciling is set while work is in progress, Stalled
// when progress needs a change of spec or revision.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
	// ConditionDrifted is True while a GitSync in spec.drift.mode Detect
	// has objects that differ from Git (the message names them and their
	// fields); it is absent in Correct mode.
	ConditionDrifted = "Drifted"

	ReasonSucceeded         = "ReconciliationSucceeded"
	ReasonProgressing       = "Progressing"
	ReasonFetchFailed       = "FetchFailed"
	ReasonRenderFailed      = "RenderFailed"
	ReasonApplyFailed       = "ApplyFailed"
	ReasonPruneFailed       = "PruneFailed"
	ReasonHealthCheckFailed = "HealthCheckFailed"
	ReasonInvalidSpec       = "InvalidSpec"
	ReasonForbidden         = "Forbidden"
	ReasonSuspended         = "Suspended"
	ReasonDeleting          = "Deleting"
	ReasonDeletionBlocked   = "DeletionBlocked"
	// ReasonRewritten: the revision applied is not a descendant of the one
	// applied before on the same branch or tag (a force push, a reset, a
	// re-tag). Ready is True; the reason stays until another revision is
	// applied.
	ReasonRewritten = "Rewritten"
	// ReasonOwnerConflict: an object in the source belongs to another
	// GitSync or CLI inventory (its owner labels say so); it is not applied.
	ReasonOwnerConflict = "OwnerConflict"
	// ReasonPruneProtected (an Event): an object left the source but is
	// protected (the GitSync itself, the GitSync CRD, the agent's own
	// workload, ServiceAccount, RBAC or Namespace) and was kept.
	ReasonPruneProtected = "PruneProtected"
	// ReasonDependencyNotReady: a GitSync in spec.dependsOn is missing or
	// not Ready at its current generation; nothing was applied.
	ReasonDependencyNotReady = "DependencyNotReady"
	// ReasonDependencyCycle: spec.dependsOn leads back to this GitSync.
	ReasonDependencyCycle = "DependencyCycle"
	// ReasonDecryptionFailed: a SOPS-encrypted file could not be decrypted
	// with the configured keys; the message names the file.
	ReasonDecryptionFailed = "DecryptionFailed"
	// ReasonVerificationFailed: spec.source.verify is set and the revision's
	// commit or tag is unsigned, signed by a key the Secret does not trust,
	// or its signature does not verify (the message names the revision and
	// why); nothing of it was applied or pruned.
	ReasonVerificationFailed = "VerificationFailed"
	// ReasonSubstitutionFailed: a variable had no value and no default in
	// strict mode, or a substituteFrom object could not be read.
	ReasonSubstitutionFailed = "SubstitutionFailed"

	// ReasonWaitingForHealth: spec.wait holds Ready for objects that are
	// not ready yet (kstatus Current); the message names them. After
	// spec.timeout the GitSync is Stalled with ReasonHealthCheckFailed
	// instead.
	ReasonWaitingForHealth = "WaitingForHealth"
	// ReasonHealthCheckInvalid: a CEL health rule (spec.healthChecks, the
	// agent's --health-rules, or a dependsOn readyExpr) does not compile,
	// does not return a bool, costs too much, or failed to evaluate; the
	// message names the rule and the error. Nothing is judged healthy by a
	// broken rule.
	ReasonHealthCheckInvalid = "HealthCheckInvalid"
	// ReasonDriftDetected (the Drifted condition and a Warning Event):
	// objects differ from Git and spec.drift.mode Detect leaves them.
	ReasonDriftDetected = "DriftDetected"
	// ReasonNoDrift: the Drifted condition is False, every object matches Git.
	ReasonNoDrift = "NoDrift"
	// ReasonWebhookRejected (a Warning Event): a push webhook for the
	// GitSync's repository did not verify with its secret.
	ReasonWebhookRejected = "WebhookRejected"

	// Reasons of a source the remote refused or could not serve (Stalled or
	// retried under them; see source/git's error classes).

	// ReasonAuthenticationRequired: the server asked for credentials and
	// none were sent.
	ReasonAuthenticationRequired = "AuthenticationRequired"
	// ReasonAuthenticationFailed: credentials were sent and the server
	// rejected them (HTTP 401 or 403, or an ssh key it does not accept).
	ReasonAuthenticationFailed = "AuthenticationFailed"
	// ReasonCredentialsUnrecognized: the credentials came from a Secret that
	// holds none under the keys read, so none were sent.
	ReasonCredentialsUnrecognized = "CredentialsUnrecognized"
	// ReasonHostKeyNotTrusted: the ssh host key is not in known_hosts.
	ReasonHostKeyNotTrusted = "HostKeyNotTrusted"
	// ReasonHostUnreachable: the remote's name did not resolve, or no
	// address answered.
	ReasonHostUnreachable = "HostUnreachable"
	// ReasonRepositoryNotFound: the server has no repository at the URL, or
	// does not show it to the credentials sent.
	ReasonRepositoryNotFound = "RepositoryNotFound"
	// ReasonRefNotFound: the branch, tag, semver range or commit is not in
	// the repository.
	ReasonRefNotFound = "RefNotFound"
	// ReasonInvalidSource: the source URL, ref or path is malformed.
	ReasonInvalidSource = "InvalidSource"
)

// Reasons of the Events and conditions of a deleting GitSync's finalizer.
const (
	// ReasonCleanedUp: every object was pruned or orphaned; release.
	ReasonCleanedUp = "InventoryCleanedUp"
	// ReasonCleaningUp: objects remain and the timeout has not passed.
	ReasonCleaningUp = "CleaningUpInventory"
	// ReasonTimedOut: the timeout passed; release, leaving objects behind.
	ReasonTimedOut = "FinalizerTimedOut"
)
