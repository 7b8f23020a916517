// Package shard lets replicas of the agent share the GitSyncs among
// themselves, with the Kubernetes API as the only coordination engine.
//
// Every replica (a Member) holds a Lease of its own in one namespace,
// labelled with its group, and renews it every RenewPeriod. The live
// replicas are the group's Leases that this replica saw change within the
// last LeaseDuration, measured on its own clock (as client-go's leader
// election does, so no remote clock is trusted). Each GitSync key belongs to
// one live replica by rendezvous hashing (Owner): a replica joining or
// leaving moves only its own share.
//
// A key is reconciled by at most one replica at a time. A replica publishes
// in its Lease the member list it works with (its view), and may start a
// key only when
//   - its published view gives it the key, and so does its latest view;
//   - a consistent list of the group's Leases, read after that publication,
//     shows no other unexpired replica whose published view gives that
//     replica the key;
//   - its last renewal started less than RenewDeadline ago.
//
// A replica publishes a new view only after every reconcile of a key the new
// view takes away from it has returned (their contexts are cancelled first),
// and it stops every reconcile when it has not renewed for RenewDeadline,
// which is shorter than the LeaseDuration after which others ignore its
// Lease. DESIGN-NOTES.md ("Sharing work between replicas") has the argument.
//
// The package never reconciles anything itself: it answers Acquire, and
// tells its user which keys changed hands (Options.Changed).
package shard
