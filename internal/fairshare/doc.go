// Package fairshare shares a fixed number of slots (reconcile workers,
// render children) among owners (tenants: GitSync namespaces) so that no
// owner holds more than its share while others wait.
//
// Contract: at most Total slots are held at once. While another owner
// waits, no owner holds more than its share (by default Share(Total):
// half, at least one); an owner alone may hold more, all slots but one, so
// a single tenant keeps the workers busy and another tenant's first work
// always finds a free slot. A TryAcquire that is refused records
// its waiter and returns at once; when a slot the waiter could take frees,
// the waiter is handed to the OnFree callback exactly once (the caller
// requeues it), so nobody holds a slot or a goroutine, or polls, while it
// waits. Acquire blocks instead, until a slot is free or its context ends.
// Pure logic: the package never starts a goroutine, reads a clock or knows
// what the slots are for.
package fairshare
