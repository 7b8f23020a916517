package agent

import "testing"

// TestListenerOff: "0" turns each listener off the same way, and so does
// an empty address.
func TestListenerOff(t *testing.T) {
	for _, addr := range []string{"0", ""} {
		if !listenerOff(addr) || bindOrOff(addr) != "0" {
			t.Errorf("%q does not turn a listener off", addr)
		}
	}
	if listenerOff(":8080") {
		t.Errorf(`":8080" turns a listener off`)
	}
}
