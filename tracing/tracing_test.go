package tracing

import (
	"context"
	"strings"
	"testing"
)

// TestProviderRefusesBadEndpoints: an endpoint that is not an http(s) URL,
// or carries credentials that would end up in logs, is refused at start.
func TestProviderRefusesBadEndpoints(t *testing.T) {
	for endpoint, want := range map[string]string{
		"collector:4318":                    "http:// or https://",
		"grpc://collector:4317":             "http:// or https://",
		"http://user:secret@collector:4318": "credentials",
		"grpc://user:secret@collector:4317": "credentials",
	} {
		_, _, err := Provider(context.Background(), Options{Endpoint: endpoint})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", endpoint, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error repeats the password: %v", endpoint, err)
		}
	}
	tp, shutdown, err := Provider(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, span := tp.Tracer(Scope).Start(context.Background(), "x"); span.IsRecording() {
		t.Error("without an endpoint spans are recorded")
	}
	if err := shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}
