package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/cluster"
	"gitsync.dev/gitsync/source/git"
)

// Waves (gitsync.dev/wave, package apply) order the objects of one
// revision. With spec.wait the agent applies a wave only when the waves
// before it are healthy, and never waits in a reconcile for it: the gate
// reads the earlier waves' health from the watch cache once; when they are
// not ready it holds the rest (nothing later applied, nothing pruned) and
// the GitSync waits as for its objects' health (judgeHealth), naming the
// wave. The status change that makes them ready requeues it, and that
// reconcile finds them unchanged and healthy and applies the next wave.
// The wait's deadline (spec.timeout) is one for the whole revision.

// waveHold is why the agent's wave gate held a revision's later waves.
type waveHold struct {
	msg     string
	recheck time.Duration
	err     error
}

// waveGate returns the gate between waves of gs's revision rev: nil (never
// hold) without spec.wait. What it saw when it held is left in hold.
func (r *GitSyncReconciler) waveGate(gs *v1.GitSync, st *syncState, tgt *cluster.Target, objs []*unstructured.Unstructured, rev git.Revision, judge *healthJudge, hold *waveHold) apply.WaveGate {
	if !gs.Spec.Wait {
		return nil
	}
	return func(ctx context.Context, done, next int, cs *apply.ChangeSet) bool {
		pending, err := judge.pending(ctx, objs, cs)
		if err != nil {
			hold.err = healthError(err)
			return false
		}
		now := r.clock.Now()
		waited := now.Sub(st.waitingSince(rev.ID(), gs.Generation, now))
		timeout := r.timeoutOf(gs)
		msg, err := judgeHealth(pending, waited, timeout)
		if msg == "" && err == nil {
			return true
		}
		if msg != "" {
			msg = fmt.Sprintf("%s; wave %d is applied once wave %d is ready", msg, next, done)
		}
		hold.msg, hold.recheck, hold.err = msg, timeout-waited, err
		return false
	}
}
