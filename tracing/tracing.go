// Package tracing owns the agent's OpenTelemetry traces: the provider that
// exports them over OTLP/HTTP, and the spans of a sync. A sync is one trace:
// its root span is started by the controller with the agent's provider, and
// every step below it (resolve, load, fetch, render, apply, prune, health)
// starts its span from the context, so the engine and the source cache need
// no provider of their own and cost nothing when no trace is being made.
//
// Spans carry names, counts and revisions, never what an error says: an
// error message may hold a value read from a Secret, and only the root span,
// ended after the sync's redactor masked the outcome, records one.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope names the instrumentation of every gitsync span.
const Scope = "gitsync.dev/gitsync"

// Options say where traces go.
type Options struct {
	// Endpoint is the OTLP/HTTP collector's base URL, e.g.
	// http://otel-collector.monitoring:4318 (traces are posted to
	// /v1/traces below it); empty turns tracing off. Headers and a CA come
	// from the exporter's standard OTEL_EXPORTER_OTLP_* variables.
	Endpoint string
	// ServiceVersion is the agent's version, a resource attribute.
	ServiceVersion string
	// BatchTimeout is the longest a finished span waits to be sent; zero
	// means the SDK's default (5s). Tests shorten it.
	BatchTimeout time.Duration
}

// Provider returns the tracer provider o asks for, and the function that
// sends what is buffered and stops it. Without an endpoint it is a no-op
// provider whose spans are never recorded.
func Provider(ctx context.Context, o Options) (trace.TracerProvider, func(context.Context) error, error) {
	if o.Endpoint == "" {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil {
		return nil, nil, errors.New("OTLP endpoint: not a URL; want the collector's http:// or https:// URL (port 4318 for OTLP/HTTP)")
	}
	if u.User != nil {
		return nil, nil, errors.New("OTLP endpoint: credentials in the URL are refused (they would be logged); pass them in OTEL_EXPORTER_OTLP_HEADERS")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL of the collector (port 4318 for OTLP/HTTP)", o.Endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "gitsync"), attribute.String("service.version", o.ServiceVersion))
	var bopts []sdktrace.BatchSpanProcessorOption
	if o.BatchTimeout > 0 {
		bopts = append(bopts, sdktrace.WithBatchTimeout(o.BatchTimeout))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, bopts...), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// Start starts the span name as a child of ctx's span, with the tracer of
// that span's provider: a no-op when ctx holds no recording span.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(Scope).Start(ctx, name, trace.WithAttributes(attrs...))
}

// End ends span, marked failed when err is set. What err says is not
// recorded (see the package comment).
func End(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}
