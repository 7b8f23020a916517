package webhook

import (
	"bytes"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestEnqueueAtOneTimePerDelivery: with EnqueueAt, every source one
// delivery verified for is enqueued with the time the delivery arrived,
// the same for all of them, so the agent shares one ls-remote asked after
// it; Enqueue is not called.
//
// Checked by passing the clock's time at each call: the keys get
// different times.
func TestEnqueueAtOneTimePerDelivery(t *testing.T) {
	clk := clocktesting.NewFakeClock(testNow)
	var mu sync.Mutex
	got := map[string]time.Time{}
	opts := DefaultOptions()
	opts.Lookup = lookupIndex(testSources)
	opts.Enqueue = func(key string) { t.Errorf("Enqueue(%s) called although EnqueueAt is set", key) }
	opts.EnqueueAt = func(key string, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		got[key] = at
		clk.Step(time.Millisecond) // time passes between keys
	}
	opts.Clock = clk
	rcv, err := NewReceiver(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	body := []byte(`{"ref":"refs/heads/main","after":"1","repository":{"clone_url":"https://git.example.com/org/app"}}`)
	if code, _ := post(t, srv.URL+"/hook/github", githubHeaders("push", body, testSecret), bytes.NewReader(body)); code != 202 {
		t.Fatalf("push answered %d", code)
	}
	var keys []string
	for k, at := range got {
		keys = append(keys, k)
		if !at.Equal(testNow) {
			t.Errorf("%s enqueued at %v, want the arrival %v", k, at, testNow)
		}
	}
	slices.Sort(keys)
	if want := []string{"ns/generic-any", "ns/generic-main"}; !slices.Equal(keys, want) {
		t.Errorf("enqueued %v, want %v", keys, want)
	}
}
