package sandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/render"
	"gitsync.dev/gitsync/source/sandbox"
)

// TestChildSlotsAreSharedByOwner: of two child slots one owner holds at
// most one, so while tenant a's bomb holds its slot, a's next render waits
// and tenant b's render still runs and finishes.
//
// Checked by giving fairshare.Limiter a share of all its slots: a's second
// bomb then takes the other slot and b's render waits behind both.
func TestChildSlotsAreSharedByOwner(t *testing.T) {
	files := chart("bomb", rangeBomb)
	for k, v := range chart("web", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n") {
		files[k] = v
	}
	repo := writeRepo(t, files)
	p := newPIDs()
	s := newSandbox(t, budget.Limits{CPU: 10 * time.Minute, Wall: 10 * time.Minute}, 2, p)
	ctxA, cancelA := context.WithCancel(budget.WithOwner(context.Background(), "a"))
	defer cancelA()
	doneA := make(chan error, 2)
	go func() { _, err := s.Render(ctxA, repo, "bomb", render.DefaultOptions()); doneA <- err }()
	<-p.ch // a's first bomb runs
	go func() { _, err := s.Render(ctxA, repo, "bomb", render.DefaultOptions()); doneA <- err }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for sandbox.Waiting(s) == 0 { // a's second bomb: waiting, or (wrongly) started
		select {
		case pid := <-p.ch:
			t.Fatalf("a's second render started (pid %d) while a's first holds a's share of the slots", pid)
		case <-tick.C:
		}
	}
	r, err := s.Render(budget.WithOwner(context.Background(), "b"), repo, "web", render.DefaultOptions())
	if err != nil || len(r.Objects) != 1 {
		t.Fatalf("b's render = %v, %v; want its one object while a's bombs hold or wait", r, err)
	}
	if n := sandbox.Waiting(s); n != 1 {
		t.Errorf("%d renders waiting after b's, want a's second still waiting", n)
	}
	cancelA()
	for range 2 {
		if err := <-doneA; !errors.Is(err, context.Canceled) {
			t.Errorf("a's render = %v, want context.Canceled", err)
		}
	}
	for _, pid := range p.all() {
		requireGone(t, pid)
	}
}
