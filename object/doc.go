// Package object is the identity of the objects gitsync manages, which every
// stage of the pipeline shares: an object's ID (group, kind, namespace,
// name), the subject messages name it by, the key inventories store it
// under, and the owner its labels name.
//
// Contract: pure functions of an object's metadata; the package reads no
// cluster, decides nothing about applying or pruning, and imports nothing of
// gitsync but the API vocabulary (api/v1alpha1), so the first stage of the
// pipeline does not stand on the last.
package object
