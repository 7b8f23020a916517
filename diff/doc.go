// Package diff decides, for each desired object, whether the live object is in
// sync, drifted or missing, and renders human-readable diffs.
//
// Contract: the decision is made from the live object (usually from a watch
// cache) by comparing the fields gitsync owns; a server-side dry-run is used
// only when the cache cannot decide, and its in-sync verdict is memoised per
// (object, desired digest, live resourceVersion). Diff never writes. Secret
// data is masked as *** in every output, including annotations and
// managedFields.
package diff
