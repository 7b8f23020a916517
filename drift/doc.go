// Package drift holds the rules that make gitsync leave parts of its
// objects alone: ignore rules (a target selector and JSON pointers of
// fields) and the per-object apply policy of the gitsync.dev/apply
// annotation (create-only, disabled).
//
// Contract: pure functions of the desired object, the live object and the
// fields the field manager owns in it; nothing here reads the cluster or
// writes. Omit never changes the objects it is given: it returns a copy.
// Values are never part of what it reports (a Skip names a path and the
// rule), so nothing it returns can hold a Secret value.
//
// How an ignored field is applied, so that server-side apply neither resets
// it nor claims it back:
//   - the object does not exist yet: Git's value is sent (it is created
//     with it);
//   - the field manager owns the field in the live object: the live value is
//     sent, so ownership stays and the value does not change (leaving it
//     out would make server-side apply remove the field);
//   - another manager took the field (an HPA's replicas, an injector's
//     caBundle), or nobody set it: the field is left out, so gitsync claims
//     nothing and the apply writes nothing for it.
package drift
