// Package apply applies desired objects with server-side apply (field manager
// "gitsync") in stages: CRDs, Namespaces and cluster-wide classes first (CRDs
// awaited until Established, by watch), then everything else, in parallel
// within a stage.
//
// Contract: the result is a ChangeSet with one entry per object; one failing
// object fails only its entry; a custom resource whose CRD failed is skipped.
// An unchanged object (package diff says in sync) is not written, so
// re-applying a converged set makes no mutating request and, when live reads
// come from a warm informer cache, no request at all. Conflicts with other
// field managers are reported as *ConflictError and left alone, except for
// the managers in Options.TakeOverManagers (kubectl's); Force takes all.
// Immutable-field changes are *ImmutableError unless the object opts in to
// recreation (v1.AnnotationRecreate) or Force is set. Apply never prunes.
//
// What is left alone is package drift's: fields under Options.Ignore are
// sent so that server-side apply neither reverts nor resets them (each is
// listed in Entry.Skips); an object annotated gitsync.dev/apply:
// create-only is written only when absent (confirmed on the apiserver when
// the live reader misses it), one annotated disabled never (Ignored, with
// the live UID only when it carries this sync's owner labels). With
// Options.DetectOnly (Applier.WithDrift) an object that differs from Git,
// or is missing, is reported Drifted with the fields that differ and not
// written.
// An error about a Secret never holds a value: it is rebuilt from the
// status's code, reason and causes' field paths, keeping its class
// (redact.go).
//
// Without Options.OwnerLabels an object keeps the owner labels its live
// object carries: only a named sync changes ownership. A dry run
// (Options.DryRun) writes nothing but takes the same path as server-side
// dry-runs, new objects included, so an entry fails with the error the real
// apply would report.
//
// A cache lags the apiserver by a watch event: an Apply right after another
// may see the previous state and re-send a no-op apply (reported as
// configured). Callers that need the second run to be free wait for the cache
// to catch up (the controller is re-triggered by the watch event anyway).
//
// The live reader may hold only some objects (the agent's caches hold only
// objects with the owner label). An object it misses is applied as new; when
// the apply's response shows the object existed before (another field
// manager, a later generation, or gitsync's managedFields entry two seconds
// or more younger than the object), the entry says configured, not created.
package apply
