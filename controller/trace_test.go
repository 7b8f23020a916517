package controller_test

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/tracing"
)

// TestSyncTraces: with an OTLP endpoint each sync is one trace, posted to
// the collector over OTLP/HTTP: a root span "sync" naming the GitSync and
// the revision, and below it resolve, load (with fetch and render under it
// when the revision is new), apply, health with spec.wait, and prune when
// objects left Git. A failed sync's root span is an error with the Ready
// condition's reason and message (the masked one), and its children say
// only that they failed.
func TestSyncTraces(t *testing.T) {
	col := newCollector(t)
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns, tracing: tracing.Options{Endpoint: col.URL, ServiceVersion: "test", BatchTimeout: 50 * time.Millisecond}})
	rp := newRepo(t)
	c1 := rp.commit(map[string]string{"deploy/a.yaml": configMap("a", "1"), "deploy/b.yaml": configMap("b", "1")})
	gs := newGitSync(ns, "app", rp.url(), func(g *v1.GitSync) { g.Spec.Prune, g.Spec.Wait = true, true })
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)

	// The sync that fetched commit 1 (it may have waited for health, and a
	// second one found it healthy).
	first := col.waitTrace(t, "the sync that fetched commit 1", func(tr trace) bool {
		return tr.has("fetch") && strings.Contains(tr.root().attrs["gitsync.revision"], c1)
	})
	root := first.root()
	if root.attrs["gitsync.namespace"] != ns || root.attrs["gitsync.name"] != "app" || root.status != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("root span %+v: want the GitSync named and no error", root)
	}
	if first.service != "gitsync" {
		t.Errorf("service.name %q", first.service)
	}
	first.wantChildren(t, "sync", "resolve", "load", "apply", "health")
	first.wantChildren(t, "load", "fetch", "render")
	if got := first.named("render").attrs["gitsync.objects"]; got != "2" {
		t.Errorf("render span objects %q, want 2", got)
	}
	if got := first.named("apply").attrs["gitsync.changes"]; got != "2 created" {
		t.Errorf("apply span changes %q, want 2 created", got)
	}

	// b leaves Git: the next sync prunes it, and says so.
	c2 := rp.commit(map[string]string{"deploy/b.yaml": ""})
	request(t, c, key, "c2")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, c2)
	})
	second := col.waitTrace(t, "the sync of commit 2", func(tr trace) bool {
		return strings.Contains(tr.root().attrs["gitsync.revision"], c2) && tr.has("prune")
	})
	second.wantChildren(t, "sync", "resolve", "load", "apply", "prune", "health")
	if got := second.named("prune").attrs["gitsync.deletions"]; got != "1" {
		t.Errorf("prune span deletions %q, want 1", got)
	}

	// An object the apiserver refuses: the trace is an error, as Ready is.
	c3 := rp.commit(map[string]string{"deploy/c.yaml": configMap("Bad_Name", "x")})
	request(t, c, key, "c3")
	failed := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionFalse, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAttemptedRevision, c3)
	})
	ready := meta.FindStatusCondition(failed.Status.Conditions, v1.ConditionReady)
	third := col.waitTrace(t, "the failed sync of commit 3", func(tr trace) bool {
		return strings.Contains(tr.root().attrs["gitsync.revision"], c3) && tr.root().status == tracepb.Status_STATUS_CODE_ERROR
	})
	if r := third.root(); r.attrs["gitsync.reason"] != ready.Reason || r.message != ready.Message {
		t.Errorf("failed root span: reason %q message %q; want Ready's %q %q", r.attrs["gitsync.reason"], r.message, ready.Reason, ready.Message)
	}
	if a := third.named("apply"); a.status != tracepb.Status_STATUS_CODE_ERROR || a.message != "" {
		t.Errorf("failed apply span: status %v message %q; want an error that says nothing", a.status, a.message)
	}
}

// span is one span as the collector received it.
type span struct {
	traceID, id, parent, name string
	start                     uint64 // Unix nanoseconds
	attrs                     map[string]string
	status                    tracepb.Status_StatusCode
	message                   string
}

// trace is the spans of one trace ID, with its resource's service name.
type trace struct {
	service string
	spans   []span
}

func (tr trace) root() span {
	for _, s := range tr.spans {
		if s.parent == "" {
			return s
		}
	}
	return span{attrs: map[string]string{}}
}

func (tr trace) has(name string) bool {
	return slices.ContainsFunc(tr.spans, func(s span) bool { return s.name == name })
}

func (tr trace) named(name string) span {
	for _, s := range tr.spans {
		if s.name == name {
			return s
		}
	}
	return span{attrs: map[string]string{}}
}

// wantChildren fails unless the span named parent has exactly children,
// in the order they started.
func (tr trace) wantChildren(t *testing.T, parent string, children ...string) {
	t.Helper()
	p := tr.named(parent)
	var got []string
	for _, s := range tr.spans {
		if s.parent != "" && s.parent == p.id {
			got = append(got, s.name)
		}
	}
	if !slices.Equal(got, children) {
		t.Errorf("children of %s: %v, want %v (trace: %v)", parent, got, children, tr.names())
	}
}

func (tr trace) names() []string {
	var out []string
	for _, s := range tr.spans {
		out = append(out, s.name)
	}
	return out
}

// collector is an OTLP/HTTP collector stand-in: it decodes every export
// request (protobuf, as the exporter sends by default) and keeps the spans.
type collector struct {
	URL     string
	mu      sync.Mutex
	traces  map[string]*trace
	order   []string
	changed chan struct{}
}

func newCollector(t *testing.T) *collector {
	col := &collector{traces: map[string]*trace{}, changed: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(col.export))
	t.Cleanup(srv.Close)
	col.URL = srv.URL
	return col
}

func (col *collector) export(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	req := &coltracepb.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(data, req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	col.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := span{traceID: hex.EncodeToString(s.GetTraceId()), id: hex.EncodeToString(s.GetSpanId()),
					parent: hex.EncodeToString(s.GetParentSpanId()), name: s.GetName(), start: s.GetStartTimeUnixNano(), attrs: map[string]string{},
					status: s.GetStatus().GetCode(), message: s.GetStatus().GetMessage()}
				for _, kv := range s.GetAttributes() {
					sp.attrs[kv.GetKey()] = anyValue(kv.GetValue())
				}
				tr := col.traces[sp.traceID]
				if tr == nil {
					tr = &trace{service: service}
					col.traces[sp.traceID] = tr
					col.order = append(col.order, sp.traceID)
				}
				tr.spans = append(tr.spans, sp)
			}
		}
	}
	col.mu.Unlock()
	select {
	case col.changed <- struct{}{}:
	default:
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// anyValue is an attribute's value as text.
func anyValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	default:
		return fmt.Sprint(v)
	}
}

// waitTrace returns the first complete trace (its root span received) that
// matches, waiting for the collector to receive it.
func (col *collector) waitTrace(t *testing.T, what string, match func(trace) bool) trace {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		col.mu.Lock()
		for _, id := range col.order {
			tr := *col.traces[id]
			tr.spans = slices.Clone(tr.spans)
			if tr.root().name == "sync" && match(tr) {
				col.mu.Unlock()
				slices.SortStableFunc(tr.spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
				return tr
			}
		}
		col.mu.Unlock()
		select {
		case <-col.changed:
		case <-deadline:
			t.Fatalf("%s: no such trace within 1m", what)
		}
	}
}
