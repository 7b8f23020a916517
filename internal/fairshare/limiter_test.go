package fairshare_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gitsync.dev/gitsync/internal/fairshare"
)

func TestShare(t *testing.T) {
	for _, tt := range []struct{ total, want int }{{1, 1}, {2, 1}, {3, 1}, {4, 2}, {5, 2}, {8, 4}} {
		if got := fairshare.Share(tt.total); got != tt.want {
			t.Errorf("Share(%d) = %d, want %d", tt.total, got, tt.want)
		}
	}
}

// step is one action on a Limiter of 4 slots: acquire (owner, key) or
// release key's slot.
type step struct {
	acquire, release string // key, "ns/name"
	owner            string
	wantOK           bool
	wantWoken        []string // keys handed to onFree by this step
}

func TestTryAcquire(t *testing.T) {
	tests := []struct {
		name  string
		total int
		steps []step
	}{
		{
			name: "an owner alone may go past its share, leaving one slot free", total: 4,
			steps: []step{
				{acquire: "a/1", owner: "a", wantOK: true},
				{acquire: "a/2", owner: "a", wantOK: true},
				{acquire: "a/3", owner: "a", wantOK: true},
				{acquire: "a/4", owner: "a", wantOK: false},
				{acquire: "b/1", owner: "b", wantOK: true},
				{acquire: "b/2", owner: "b", wantOK: false},
			},
		},
		{
			name: "while another owner waits, nobody goes past its share", total: 4,
			steps: []step{
				{acquire: "a/1", owner: "a", wantOK: true},
				{acquire: "a/2", owner: "a", wantOK: true},
				{acquire: "b/1", owner: "b", wantOK: true},
				{acquire: "b/2", owner: "b", wantOK: true},
				{acquire: "c/1", owner: "c", wantOK: false},
				{release: "b/2", wantWoken: []string{"c/1"}},
				{acquire: "a/3", owner: "a", wantOK: false},
				{acquire: "c/1", owner: "c", wantOK: true},
				{release: "c/1"},
				{release: "a/1", wantWoken: []string{"a/3"}},
			},
		},
		{
			name: "a freed slot wakes the first waiter of its owner, once", total: 4,
			steps: []step{
				{acquire: "b/1", owner: "b", wantOK: true},
				{acquire: "a/1", owner: "a", wantOK: true},
				{acquire: "a/2", owner: "a", wantOK: true},
				{acquire: "a/3", owner: "a", wantOK: false},
				{acquire: "a/4", owner: "a", wantOK: false},
				{release: "a/1", wantWoken: []string{"a/3"}},
				{acquire: "a/3", owner: "a", wantOK: true},
				{release: "a/2", wantWoken: []string{"a/4"}},
				{acquire: "a/4", owner: "a", wantOK: true},
				{release: "a/3"},
			},
		},
		{
			name: "another owner's release wakes nobody who is still at its share", total: 4,
			steps: []step{
				{acquire: "b/1", owner: "b", wantOK: true},
				{acquire: "c/1", owner: "c", wantOK: true},
				{acquire: "a/1", owner: "a", wantOK: true},
				{acquire: "a/2", owner: "a", wantOK: true},
				{acquire: "a/3", owner: "a", wantOK: false},
				{acquire: "b/2", owner: "b", wantOK: false},
				{release: "c/1", wantWoken: []string{"b/2"}},
				{acquire: "b/2", owner: "b", wantOK: true},
				{release: "b/2"},
				{release: "a/2", wantWoken: []string{"a/3"}},
			},
		},
		{
			name: "a refused waiter is recorded once however often it asks", total: 2,
			steps: []step{
				{acquire: "a/1", owner: "a", wantOK: true},
				{acquire: "a/2", owner: "a", wantOK: false},
				{acquire: "a/2", owner: "a", wantOK: false},
				{release: "a/1", wantWoken: []string{"a/2"}},
				{acquire: "b/1", owner: "b", wantOK: true},
				{release: "b/1"},
			},
		},
		{
			name: "when all slots are held, the release wakes a waiter of another owner", total: 2,
			steps: []step{
				{acquire: "a/1", owner: "a", wantOK: true},
				{acquire: "b/1", owner: "b", wantOK: true},
				{acquire: "c/1", owner: "c", wantOK: false},
				{release: "a/1", wantWoken: []string{"c/1"}},
				{acquire: "c/1", owner: "c", wantOK: true},
			},
		},
		{
			name: "one slot: everyone takes turns", total: 1,
			steps: []step{
				{acquire: "a/1", owner: "a", wantOK: true},
				{acquire: "b/1", owner: "b", wantOK: false},
				{release: "a/1", wantWoken: []string{"b/1"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var woken []string
			l := fairshare.New(tt.total, 0, func(k string) { woken = append(woken, k) })
			releases := map[string]func(){}
			for i, s := range tt.steps {
				woken = nil
				if s.acquire != "" {
					release, ok := l.TryAcquire(s.owner, s.acquire)
					if ok != s.wantOK {
						t.Fatalf("step %d: TryAcquire(%s, %s) = %v, want %v", i, s.owner, s.acquire, ok, s.wantOK)
					}
					if ok {
						releases[s.acquire] = release
					}
				} else {
					releases[s.release]()
					releases[s.release]() // a second call gives nothing back
				}
				if diff := cmp.Diff(s.wantWoken, woken); diff != "" {
					t.Fatalf("step %d: woken (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestForgetStopsWaiting(t *testing.T) {
	var woken []string
	l := fairshare.New(2, 0, func(k string) { woken = append(woken, k) })
	release, _ := l.TryAcquire("a", "a/1")
	if _, ok := l.TryAcquire("a", "a/2"); ok {
		t.Fatal("a/2 got a second slot of a's share of 1")
	}
	l.Forget("a/2")
	release()
	if len(woken) != 0 || l.Waiting() != 0 {
		t.Errorf("woken %v, %d waiting; want nobody after Forget", woken, l.Waiting())
	}
}

func TestAcquireBlocksUntilFreedOrCancelled(t *testing.T) {
	l := fairshare.New[string](2, 0, nil)
	first, err := l.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Acquire(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire over a's share = %v, want it to wait until cancelled", err)
	}
	other, err := l.Acquire(context.Background(), "b")
	if err != nil {
		t.Fatalf("b refused while a holds only its share: %v", err)
	}
	other()
	got := make(chan error, 1)
	go func() {
		release, err := l.Acquire(context.Background(), "a")
		if err == nil {
			release()
		}
		got <- err
	}()
	first()
	if err := <-got; err != nil {
		t.Fatalf("waiting Acquire after the release = %v", err)
	}
	if l.Held("a") != 0 {
		t.Errorf("a holds %d slots after every release", l.Held("a"))
	}
}

// TestExplicitShare: an owner alone takes its share and more, all but one
// slot (the one another owner's first work will find), or all of them when
// its share is all.
func TestExplicitShare(t *testing.T) {
	for _, tt := range []struct{ total, share, want int }{{4, 0, 3}, {4, 3, 3}, {4, 9, 4}, {1, 0, 1}, {2, 0, 1}} {
		l := fairshare.New[string](tt.total, tt.share, nil)
		got := 0
		for i := range tt.total {
			if _, ok := l.TryAcquire("a", fmt.Sprint(i)); ok {
				got++
			}
		}
		if got != tt.want {
			t.Errorf("New(%d, %d): one owner got %d slots, want %d", tt.total, tt.share, got, tt.want)
		}
	}
}
