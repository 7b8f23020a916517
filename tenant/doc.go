// Package tenant is the one boundary between a GitSync's author and the
// agent: every Secret and ConfigMap a GitSync names (its source
// credentials, kubeconfig, webhook and commit-status tokens, substitution
// variables, decryption keys, and any reference the API gains, RefsOf) is
// read through its Reader.
//
// Contract: a read stays in the GitSync's namespace; when the GitSync has
// an account (spec.serviceAccountName), the account must be allowed to get
// the object, asked with a SelfSubjectAccessReview as that account, or the
// read fails with a *ForbiddenError before the object is used; an answer
// is kept no longer than the object's next change, the next change of any
// RBAC object, or one interval of the GitSync, whichever comes first; every
// Secret value read is told to the caller's redact.Redactor. Without an
// account the agent reads with its own rights and the namespace is the
// boundary. Objects are served from one list+watch per named object, so a
// converged GitSync reads without a request.
//
// The package never writes, never reads an object no GitSync names, never
// lists a namespace's objects, and never keeps an object after the last
// GitSync naming it stops doing so.
package tenant
