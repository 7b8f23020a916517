package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/cluster"
	"gitsync.dev/gitsync/engine"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/prepare"
	"gitsync.dev/gitsync/redact"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/oci"
	"gitsync.dev/gitsync/source/render"
	"gitsync.dev/gitsync/tenant"
	"gitsync.dev/gitsync/tracing"
)

// outcome is what one sync did, for status, events and metrics.
type outcome struct {
	// attempted and applied are revisions in Revision.String() form;
	// applied is set only when everything succeeded.
	attempted, applied string
	// signer names who signed the revision (verify.Result) when
	// spec.source.verify is set; recorded with applied.
	signer string
	// inventory to store; nil keeps the stored one.
	inventory *inventory.Inventory
	changes   *apply.ChangeSet
	pruned    *inventory.PruneResult
	rewind    *rewind
	// waiting, set when the sync applied everything and spec.wait holds
	// Ready, names the objects not ready yet; recheck is when the wait
	// times out if no status change requeues the GitSync before.
	waiting string
	recheck time.Duration
	// waitReason is the reason reported while waiting; empty means
	// v1.ReasonWaitingForHealth (holdForDependencies holds with
	// DependencyNotReady).
	waitReason string
	// detect is set for a GitSync in spec.drift.mode Detect; drift is
	// then the Drifted condition's message (driftMessage of the changes'
	// Drifted entries, masked like err), empty when nothing drifted.
	detect bool
	drift  string
	err    error
	// yielded is set when the sync stopped after fetching a revision that
	// left its content alone, so GitSyncs whose content changed go first
	// (yieldToChanged).
	yielded bool
	// took is how long the sync ran; objs what it prepared to apply and
	// red the redactor of its Secret-born values (status.history's digest).
	took time.Duration
	objs []*unstructured.Unstructured
	red  *redact.Redactor
}

// waitsForHealth reports whether the sync ended waiting for, or Stalled on,
// the health of its objects: then their status changes requeue it.
func (o *outcome) waitsForHealth() bool {
	if o.waiting != "" {
		return o.waitReason == ""
	}
	se := o.syncErr()
	return se != nil && se.Reason == v1.ReasonHealthCheckFailed
}

func (o *outcome) syncErr() *syncError {
	if o.err == nil {
		return nil
	}
	return asSyncError(o.err, v1.ReasonApplyFailed)
}

// sync runs the pipeline once: resolve, verify, fetch+render, apply, prune,
// health. Nothing is pruned unless resolve, verification, render and apply
// all succeeded.
func (r *GitSyncReconciler) sync(ctx context.Context, gs *v1.GitSync, st *syncState) *outcome {
	ctx, cancel := context.WithTimeout(ctx, r.timeoutOf(gs))
	defer cancel()
	start := r.clock.Now()
	out := &outcome{}
	defer func() { out.took = r.clock.Since(start) }()
	ctx, span := r.startSync(ctx, gs)
	defer endSync(span, out) // after scrub: the span says what status will
	// Every value the sync reads from a Secret, decrypts or substitutes is
	// known to red, which masks it in the error status, Events and the log
	// are made from.
	red := redact.New()
	out.red = red
	defer scrub(red, out)
	view := r.reader.For(gs, red)
	refresh := st.needsResolve(gs, r.clock.Now())
	tgt, err := r.target(ctx, view, gs, refresh)
	if err != nil {
		out.err = err
		return out
	}
	rctx, rspan := tracing.Start(ctx, "resolve", attribute.Bool("gitsync.refresh", refresh))
	src, rev, err := r.revision(rctx, gs, st, view, refresh)
	rspan.SetAttributes(attribute.String("gitsync.revision", rev.String()))
	tracing.End(rspan, err)
	if err != nil {
		out.err = err
		return out
	}
	out.attempted = rev.String()
	if out.signer, err = r.verified(ctx, gs, st, view, src, rev); err != nil {
		out.err = err
		return out
	}
	charts, err := chartAccess(ctx, gs, view)
	if err != nil {
		out.err = err
		return out
	}
	if out.signer, err = r.helmChartVerified(ctx, gs, st, rev, charts, out.signer); err != nil {
		out.err = err
		return out
	}
	lctx, lspan := tracing.Start(ctx, "load")
	rendered, err := r.render(lctx, gs, st, tgt, src, rev, charts)
	if rendered != nil {
		lspan.SetAttributes(attribute.Int("gitsync.objects", len(rendered.Objects)))
	}
	tracing.End(lspan, err)
	if err != nil {
		out.err = err
		return out
	}
	if refresh && r.yieldToChanged(ctx, gs, src, rev) {
		out.yielded = true
		return out
	}
	objs, err := r.prepare(ctx, gs, view, red, rendered.Objects, rendered.SOPSLookup)
	if err != nil {
		out.err = err
		return out
	}
	out.objs = objs
	out.rewind = r.rewindOf(ctx, gs, st, src, rev)
	opts, shareErr := r.engineOptions(gs, tgt)
	applier, err := driftApplier(gs, tgt, rev)
	if err != nil {
		out.err = err
		return out
	}
	opts.Applier = applier
	out.detect = prepare.DetectsDrift(gs)
	live, err := r.preflight(ctx, gs, st, tgt, objs)
	if err != nil {
		out.err = err
		return out
	}
	readAround := live != client.Reader(tgt.Cache) // kinds still list (a livecache.Reader)
	if readAround {
		applier = applier.WithLive(live)
		opts.Applier = applier
	}
	var judge *healthJudge
	if gs.Spec.Wait {
		// Rules that do not compile stop the sync before it applies what
		// they could not judge.
		hr, err := r.healthRules(gs)
		if err != nil {
			out.err = err
			return out
		}
		judge = newHealthJudge(len(objs), hr, live)
		opts.Applier = applier.WithWritten(judge.observe)
		// From now on the watch events of the objects, our own writes'
		// included, requeue gs: none is lost between the apply and the
		// health check.
		r.waits.set(client.ObjectKeyFromObject(gs), true)
	}
	r.commitApplying(gs, rev)
	hold := &waveHold{}
	opts.BetweenWaves = r.waveGate(gs, st, tgt, objs, rev, judge, hold)
	res, err := engine.Run(ctx, objs, &statusStore{r: r, gs: gs, st: st}, opts)
	out.changes, out.pruned, out.inventory = res.Changes, res.Pruned, res.Inventory
	if out.detect && res.Changes != nil {
		out.drift = driftMessage(res.Changes.Drifted())
	}
	r.opts.Metrics.ObserveApply(res.Changes)
	if res.Pruned != nil {
		r.opts.Metrics.ObservePruned(res.Pruned.Count(inventory.ActionPruned))
	}
	// Once the watches of kinds that did not deliver events yet do, a
	// reconcile from the cache sees what changed in between; one that read
	// through a Reader gets it anyway (its kinds may have listed during
	// the sync, with changes in them).
	watchErr := r.kinds.Watch(ctx, tgt.Cache, objs)
	key := client.ObjectKeyFromObject(gs)
	if !r.kinds.AfterListing(tgt.Cache, objs, func() { r.enqueueSoon(key) }) && readAround {
		r.enqueueSoon(key)
	}
	if err := errors.Join(classifyRun(err), watchErr); err != nil {
		forgetAccessOnForbidden(tgt, err)
		out.err = err
		return out
	}
	if shareErr != nil {
		out.err = shareErr
		return out
	}
	if res.Held { // a later wave waits for an earlier one's health
		out.waiting, out.recheck, out.err = hold.msg, hold.recheck, hold.err
		return out
	}
	if gs.Spec.Wait {
		hctx, hspan := tracing.Start(ctx, "health")
		out.waiting, out.recheck, out.err = r.judgeWait(hctx, gs, st, tgt, objs, res.Changes, rev, judge)
		hspan.SetAttributes(attribute.Bool("gitsync.healthy", out.waiting == "" && out.err == nil))
		tracing.End(hspan, out.err)
		if out.waiting != "" || out.err != nil {
			return out
		}
	}
	out.applied = rev.String()
	return out
}

// startSync starts the root span of one sync of gs, with the agent's
// tracer provider: the trace of this reconcile.
func (r *GitSyncReconciler) startSync(ctx context.Context, gs *v1.GitSync) (context.Context, trace.Span) {
	return r.tracer.Start(ctx, "sync", trace.WithNewRoot(), trace.WithAttributes(
		attribute.String("gitsync.namespace", gs.Namespace),
		attribute.String("gitsync.name", gs.Name),
		attribute.Int64("gitsync.generation", gs.Generation)))
}

// endSync ends a sync's span with its outcome, out's error already masked
// by the sync's redactor (scrub), as the Ready condition will show it.
func endSync(span trace.Span, out *outcome) {
	span.SetAttributes(
		attribute.String("gitsync.revision", out.attempted),
		attribute.Bool("gitsync.applied", out.applied != ""),
		attribute.Bool("gitsync.waiting", out.waiting != ""),
		attribute.Int("gitsync.objects", len(out.objs)))
	if out.changes != nil {
		span.SetAttributes(attribute.String("gitsync.changes", out.changes.Summary()))
	}
	if se := out.syncErr(); se != nil {
		span.SetAttributes(attribute.String("gitsync.reason", se.Reason))
		span.SetStatus(codes.Error, clipMessage(se.Error()))
	}
	span.End()
}

// judgeWait reads the health of the objects rev applied and says whether
// gs still waits for them (a message and when to look again at the latest),
// is Stalled on them, or is done.
func (r *GitSyncReconciler) judgeWait(ctx context.Context, gs *v1.GitSync, st *syncState, tgt *cluster.Target, objs []*unstructured.Unstructured, cs *apply.ChangeSet, rev git.Revision, judge *healthJudge) (string, time.Duration, error) {
	pending, err := judge.pending(ctx, objs, cs)
	if err != nil {
		return "", 0, healthError(err)
	}
	now := r.clock.Now()
	waited := now.Sub(st.waitingSince(rev.ID(), gs.Generation, now))
	timeout := r.timeoutOf(gs)
	msg, err := judgeHealth(pending, waited, timeout)
	if msg == "" && err == nil {
		st.endWait()
	}
	return msg, timeout - waited, err
}

// revision returns the source and the revision to sync: freshly resolved
// when refresh is set, else the one resolved last (drift repairs and status
// retries do not ask the remote again before the interval is up).
func (r *GitSyncReconciler) revision(ctx context.Context, gs *v1.GitSync, st *syncState, view *tenant.View, refresh bool) (git.Source, git.Revision, error) {
	if !refresh {
		src, rev := st.last()
		return src, rev, nil
	}
	now := r.clock.Now()
	notBefore := st.takeFetchMark(gs, now, r.opts.Limits.ResolveShareFor)
	switch {
	case gs.Spec.Source.Chart != "" && !oci.IsURL(gs.Spec.Source.URL):
		return r.chartRevision(ctx, gs, st, view, now, notBefore)
	case oci.IsURL(gs.Spec.Source.URL):
		return r.artifactRevision(ctx, gs, st, view, now)
	}
	src, err := r.sourceOf(ctx, gs, view)
	if err != nil {
		return src, git.Revision{}, err
	}
	rev, err := r.resolve(ctx, gs, src, notBefore)
	if err != nil {
		return src, rev, classifyFetch(err)
	}
	if rev, err = r.withHelmChart(ctx, gs, st, view, rev, notBefore); err != nil { // helmchart.go
		return src, rev, err
	}
	st.resolved(gs, src, rev, now)
	return src, rev, nil
}

// render returns the objects of rev; a permanent failure is remembered so
// the same broken commit is not fetched and rendered again.
func (r *GitSyncReconciler) render(ctx context.Context, gs *v1.GitSync, st *syncState, tgt *cluster.Target, src git.Source, rev git.Revision, charts chartrepo.Access) (*render.Rendered, error) {
	if err := st.stalledOn(gs.Generation, rev.ID()); err != nil {
		return nil, err
	}
	art, err := r.getCapped(ctx, gs, st, tgt, src, rev, charts)
	if err == nil && len(art.Rendered.Objects) == 0 && !gs.Spec.AllowEmpty {
		err = stalled(v1.ReasonRenderFailed, fmt.Errorf("path %q at %s renders no objects (set spec.allowEmpty to sync an empty set)", src.Path, rev))
	}
	if err != nil {
		if rev.IsArtifact() {
			err = classifyArtifact(err, gs.Spec.Source.SecretRef != nil) // classifyFetch for the rest
		} else {
			err = classifyFetch(err)
		}
		// A failure of the remote (a pinned commit not pushed yet, refused
		// credentials) is not remembered: it may pass at the next resolve.
		// Of an artifact, only what its content is (too large, not a
		// directory of files, not rendering) is. Nor is a chart refused
		// by its signature: a signature or a key may be added at any time.
		se := asSyncError(err, "")
		if se.Stalled && git.Reason(err) == "" && se.Reason != v1.ReasonVerificationFailed && (!rev.IsArtifact() || se.Reason == v1.ReasonRenderFailed) {
			st.setStalled(gs.Generation, rev.ID(), err)
		}
		return nil, err
	}
	return art.Rendered, nil
}

// engineOptions are the sync pipeline's options for gs: its applier and
// owner, and the agent's prune rails with gs's overrides. An invalid
// prune-max-share annotation turns pruning off for this run (the objects
// are still applied and recorded) and is reported by sync.
func (r *GitSyncReconciler) engineOptions(gs *v1.GitSync, tgt *cluster.Target) (engine.Options, error) {
	opts := engine.DefaultOptions()
	opts.Applier, opts.Client, opts.Prune = tgt.Applier, tgt.Client, gs.Spec.Prune
	// The final inventory goes out with the status report (report), one
	// status write per sync besides the pending record.
	opts.FinalSaveByCaller = true
	rails, err := r.pruneRails(gs)
	if err != nil {
		opts.Prune = false
	}
	opts.PruneOptions = rails
	return opts, err
}

// driftApplier is tgt's applier under gs's spec.drift: its ignore rules,
// and detect-only unless rev is news. In spec.drift.mode Detect a new
// revision, a changed spec or a sync that has not succeeded yet is applied
// whole (Git's new content is the point of GitOps); only between them is
// drift reported and left.
func driftApplier(gs *v1.GitSync, tgt *cluster.Target, rev git.Revision) (*apply.Applier, error) {
	rules, err := prepare.DriftRules(gs)
	if err != nil {
		return nil, stalled(v1.ReasonInvalidSpec, err)
	}
	return tgt.Applier.WithDrift(rules, prepare.DetectsDrift(gs) && settled(gs, rev)), nil
}

// settled reports whether rev and gs's spec are what the last sync applied
// in full: Ready for this generation, and rev the last applied revision.
func settled(gs *v1.GitSync, rev git.Revision) bool {
	ready := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady)
	return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == gs.Generation &&
		ready.Reason != v1.ReasonSuspended && gs.Status.LastAppliedRevision == rev.String()
}

// classifyRun sorts a failed engine run by the stage that failed.
func classifyRun(err error) error {
	var ae *engine.ApplyError
	var pe *engine.PruneError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return classifyApply(ae.Changes, ae.Run)
	case errors.As(err, &pe):
		return classifyPrune(err)
	}
	return asSyncError(err, v1.ReasonApplyFailed)
}
