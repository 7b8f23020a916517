// Package livecache owns what the agent holds of live objects: the watch
// cache's options (GitSyncs as the operator selects them, and of every
// other kind only objects carrying the owner label), the transform that
// keeps each cached object small (CompactLive), and the informers and
// watches of the kinds GitSyncs applied, per cache (Kinds).
//
// Contract: memory follows what GitSyncs manage, never the cluster's size;
// a kind is read into a cache only after the agent was seen to be allowed
// to list and watch it, and an informer that cannot sync is stopped rather
// than left retrying; a watch is registered once per kind and cache.
//
// It never decides what a change means: which GitSync an event requeues,
// and which events do, are the handler and predicate its caller gives
// NewKinds. It never writes, and reads no Secret.
package livecache
