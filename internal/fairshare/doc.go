// Package fairshare shares a fixed number of slots (reconcile workers,
// render children) among owners (tenants: GitSync namespaces) so that no
// owner holds more than its share while others wait.
//
// Contract: at most Total slots are held at once, and at most a share of
// them by one owner (by default Share(Total): half, at least one). A TryAcquire that is refused records
// its waiter and returns at once; when a slot the waiter could take frees,
// the waiter is handed to the OnFree callback exactly once (the caller
// requeues it), so nobody holds a slot or a goroutine, or polls, while it
// waits. Acquire blocks instead, until a slot is free or its context ends.
// Pure logic: the package never starts a goroutine, reads a clock or knows
// what the slots are for.
package fairshare
