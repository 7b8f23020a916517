// Package substitute replaces ${NAME} and ${NAME:=default} in the string
// values of rendered objects with per-GitSync variables.
//
// Contract: it works on the decoded object tree, never on YAML text, so a
// value (which may come from a tenant's ConfigMap) can never add a field, an
// object or a line of structure: whatever it holds becomes part of one string.
// Map keys are not substituted, and neither are the identifying apiVersion and
// kind, nor the top-level "sops" metadata of an encrypted document. A value
// is inserted once, never scanned again, so a value holding "${OTHER}" stays
// literal. "$${NAME}" is the escape for a literal "${NAME}". A "${...}" whose
// content is not a variable name (shell's ${1}, ${#list[@]}, ${a.b}) is left
// as it is.
//
// Every string substitution builds is charged to Options.Budget before it
// is built, so a large variable used many times is refused at the charge
// that passes the budget (a *BudgetError), not after the memory is spent.
//
// Input objects are never modified (they may be shared by several GitSyncs
// through the render cache): an object that changes is deep-copied first.
// Errors name the object, the field path and the variable, never a value.
package substitute
