// Package diff decides, for each desired object, whether the live object is in
// sync, drifted or missing, and renders human-readable diffs.
//
// Contract: the decision is made from the live object (usually from a watch
// cache) by comparing the fields gitsync owns; a server-side dry-run is used
// only when the cache cannot decide, and its in-sync verdict is memoised per
// (object, desired digest, live resourceVersion). Diff never writes. Secret
// data is masked as *** in every output, including annotations and
// managedFields (which name Secret keys but never hold their values; text
// diffs leave them out).
//
// In sync means a server-side apply of the desired object would write
// nothing: every value is already there and gitsync's field set would not
// change. So a field removed from Git that gitsync owns is drift, and so is a
// field another manager (kubectl edit) took over, even when Git now agrees
// with its value: gitsync takes it back.
//
// The local decision reads the FieldsV1 of gitsync's Apply entry in the live
// managedFields, so caches feeding Diff must keep managedFields, and live must
// be read in desired's apiVersion. It only ever answers in-sync, and only when
// certain; anything else (a value the server normalises, a defaulted list key
// it does not know, an empty map the server filled) goes to the dry-run,
// which is the authority and the only source of Drifted.
package diff
