// Package crashpoint lets fault tests kill the agent at a named point of its
// work, the way a node failure or an OOM kill would.
//
// A point is a name such as "after-apply". When the environment variable
// GITSYNC_CRASH_AT names it when the process starts, Hit kills the process
// with SIGKILL at that point: no deferred function runs, no buffer is
// flushed, nothing is written afterwards. With GITSYNC_CRASH_AT unset (every
// real deployment) Hit is a comparison against an empty string and nothing
// else.
//
// GITSYNC_CRASH_AT may carry "name" (crash the first time the point is hit)
// or "name@N" (crash the N-th time). A marker file named by
// GITSYNC_CRASH_MARKER, when set, is created just before the kill so a test
// can tell the crash happened where it asked, rather than for another reason.
package crashpoint
