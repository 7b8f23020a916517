package tracing

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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

// BenchmarkSpanOff is what a span costs a sync when tracing is off: the
// engine and the source cache start theirs from a context without one.
func BenchmarkSpanOff(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, span := Start(ctx, "apply")
		End(span, nil)
	}
}

// BenchmarkSpanOn is the same span under a recording root (an SDK provider
// whose spans go nowhere).
func BenchmarkSpanOn(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, root := tp.Tracer(Scope).Start(context.Background(), "sync")
	defer root.End()
	b.ReportAllocs()
	for b.Loop() {
		_, span := Start(ctx, "apply")
		End(span, nil)
	}
}
