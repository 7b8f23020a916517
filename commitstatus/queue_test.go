package commitstatus_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"gitsync.dev/gitsync/commitstatus"
)

// heldPoster records what it posts. Each post says it started on entered,
// waits for release and says it recorded on recorded; it fails while fail
// is set.
type heldPoster struct {
	entered, release, recorded chan struct{}
	fail                       bool

	mu     sync.Mutex
	posted []string
}

func newHeldPoster(fail bool) *heldPoster {
	return &heldPoster{entered: make(chan struct{}), release: make(chan struct{}), recorded: make(chan struct{}, 10), fail: fail}
}

func (p *heldPoster) post(_ context.Context, r commitstatus.Report) error {
	p.entered <- struct{}{}
	<-p.release
	p.mu.Lock()
	defer p.mu.Unlock()
	p.posted = append(p.posted, r.Status.Commit+":"+string(r.Status.State))
	p.recorded <- struct{}{}
	if p.fail {
		return errors.New("host down")
	}
	return nil
}

// step lets one post through: it waits for the post to start, releases
// it and waits until it is recorded.
func (p *heldPoster) step() {
	<-p.entered
	p.release <- struct{}{}
	<-p.recorded
}

func (p *heldPoster) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.posted...)
}

var appKey = types.NamespacedName{Namespace: "ns", Name: "app"}

func report(commit string, state commitstatus.State, description string) commitstatus.Report {
	return commitstatus.Report{
		Key:    appKey,
		To:     commitstatus.Destination{Provider: "gitea", RepoURL: "https://git.example.com/org/app.git", Secret: "token"},
		Status: commitstatus.Status{Commit: commit, State: state, Description: description, Context: "gitsync/ns/app"},
	}
}

// TestQueuePostsChangesInOrder: reports are posted in the order queued;
// one that says what the last one said is dropped (a failure only when its
// reason is the same); while the host is slow only the newest MaxQueued
// wait.
//
// Checked by leaving the Description out of same: the second failure is
// dropped and the first is posted.
func TestQueuePostsChangesInOrder(t *testing.T) {
	p := newHeldPoster(false)
	q := commitstatus.NewQueue(commitstatus.QueueOptions{Post: p.post, MaxQueued: 2})
	q.Add(report("a", commitstatus.Pending, "applying"))
	<-p.entered                                         // the sender holds it
	q.Add(report("a", commitstatus.Pending, "waiting")) // the same state: dropped
	q.Add(report("a", commitstatus.Failure, "boom"))    // pushed out below
	q.Add(report("a", commitstatus.Failure, "boom"))    // the same reason: dropped
	q.Add(report("a", commitstatus.Failure, "other"))   // a new reason
	q.Add(report("a", commitstatus.Success, "ready"))   // the queue keeps the newest 2
	p.release <- struct{}{}
	<-p.recorded
	p.step()
	p.step()
	want := []string{"a:pending", "a:failure", "a:success"}
	if d := cmp.Diff(want, p.got()); d != "" {
		t.Errorf("posted (-want +got):\n%s", d)
	}
	if commit, ok := q.LastCommit(appKey); !ok || commit != "a" {
		t.Errorf("LastCommit = %q, %t; want a", commit, ok)
	}
}

// TestQueueRetriesFailedReport: a failed post is told once per report as
// its first failure, and the same report queued again (by the next
// reconcile) is posted again rather than dropped as already said.
//
// Checked by keeping the failed report as the last one queued: the second
// Add is dropped and nothing is posted again.
func TestQueueRetriesFailedReport(t *testing.T) {
	p := newHeldPoster(true)
	failed := make(chan bool)
	q := commitstatus.NewQueue(commitstatus.QueueOptions{Post: p.post, Failed: func(_ commitstatus.Report, _ error, first bool) {
		failed <- first
	}})
	var firsts []bool
	for range 2 {
		q.Add(report("b", commitstatus.Success, "ready"))
		p.step()
		firsts = append(firsts, <-failed)
	}
	if d := cmp.Diff([]string{"b:success", "b:success"}, p.got()); d != "" {
		t.Errorf("posted (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]bool{true, false}, firsts); d != "" {
		t.Errorf("first-failure flags (-want +got):\n%s", d)
	}
}
