package chart_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/metrics"
)

// TestMonitoringTemplates renders the Prometheus Operator opt-ins and checks
// they point at what the chart and the agent really expose: the monitors at
// the metrics port of the Service and Pods they select, the alerts at metric
// names and labels the agent registers.
func TestMonitoringTemplates(t *testing.T) {
	const ns = "gitsync-system"
	objs := template(t, "gs", ns, "--set",
		"metrics.serviceMonitor.enabled=true,metrics.podMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.prometheusRule.notReadyFor=10m")
	svc := find(t, objs, "Service", ns, "gs-gitsync")
	deploy := find(t, objs, "Deployment", ns, "gs-gitsync")

	sm := find(t, objs, "ServiceMonitor", ns, "gs-gitsync")
	selects(t, sm, svc.GetLabels())
	svcPorts, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || !hasNamedPort(svcPorts, endpoints[0].(map[string]any)["port"]) {
		t.Errorf("ServiceMonitor endpoints %v: want the Service's metrics port", endpoints)
	}

	pm := find(t, objs, "PodMonitor", ns, "gs-gitsync")
	podLabels, _, _ := unstructured.NestedStringMap(deploy.Object, "spec", "template", "metadata", "labels")
	selects(t, pm, podLabels)
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	ports, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "ports")
	pmEndpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(pmEndpoints) != 1 || !hasNamedPort(ports, pmEndpoints[0].(map[string]any)["port"]) {
		t.Errorf("PodMonitor endpoints %v: want the container's metrics port", pmEndpoints)
	}

	registered := agentMetrics(t)
	rule := find(t, objs, "PrometheusRule", ns, "gs-gitsync")
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	rules, _, _ := unstructured.NestedSlice(groups[0].(map[string]any), "rules")
	alerts := map[string]map[string]any{}
	for _, r := range rules {
		r := r.(map[string]any)
		alerts[r["alert"].(string)] = r
	}
	for name, wantFor := range map[string]string{"GitSyncNotReady": "10m", "GitSyncFetchFailing": "15m"} {
		a, ok := alerts[name]
		if !ok {
			t.Errorf("PrometheusRule has no alert %s", name)
			continue
		}
		if a["for"] != wantFor {
			t.Errorf("alert %s for: %v, want %s", name, a["for"], wantFor)
		}
		checkExpr(t, name, a["expr"].(string), registered)
	}
}

// selects fails unless the monitor's selector matches labels.
func selects(t *testing.T, monitor *unstructured.Unstructured, labels map[string]string) {
	t.Helper()
	sel, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	if len(sel) == 0 {
		t.Errorf("%s selects everything", monitor.GetKind())
	}
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("%s selects %s=%s, which %v lacks", monitor.GetKind(), k, v, labels)
		}
	}
}

func hasNamedPort(ports []any, name any) bool {
	return slices.ContainsFunc(ports, func(p any) bool { return p.(map[string]any)["name"] == name })
}

var (
	metricRE  = regexp.MustCompile(`gitsync_[a-z_]+`)
	matcherRE = regexp.MustCompile(`([a-z_]+)\s*(=~|!~|!=|=)`)
	byRE      = regexp.MustCompile(`by \(([^)]*)\)`)
)

// checkExpr fails unless every gitsync metric in expr is one the agent
// registers and every label the expression names is one of its labels.
func checkExpr(t *testing.T, alert, expr string, registered map[string][]string) {
	t.Helper()
	names := metricRE.FindAllString(expr, -1)
	if len(names) == 0 {
		t.Errorf("alert %s: no gitsync metric in %q", alert, expr)
	}
	var labels []string
	for _, m := range matcherRE.FindAllStringSubmatch(expr, -1) {
		labels = append(labels, m[1])
	}
	for _, m := range byRE.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			labels = append(labels, strings.TrimSpace(l))
		}
	}
	for _, n := range names {
		have, ok := registered[n]
		if !ok {
			t.Errorf("alert %s uses %s, which the agent does not register", alert, n)
			continue
		}
		for _, l := range labels {
			if !slices.Contains(have, l) {
				t.Errorf("alert %s uses label %s of %s, which has only %v", alert, l, n, have)
			}
		}
	}
}

// agentMetrics returns the agent's metric names with their label names, as
// metrics.New registers them.
func agentMetrics(t *testing.T) map[string][]string {
	t.Helper()
	reg := &recorder{}
	if _, err := metrics.New(reg); err != nil {
		t.Fatal(err)
	}
	descs := make(chan *prometheus.Desc, 100)
	for _, c := range reg.collectors {
		c.Describe(descs)
	}
	close(descs)
	// Desc has no accessors; its String() is `Desc{fqName: "x", help: ..., variableLabels: {a,b}}`.
	nameRE := regexp.MustCompile(`fqName: "([^"]+)"`)
	labelsRE := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	out := map[string][]string{}
	for d := range descs {
		s := d.String()
		n := nameRE.FindStringSubmatch(s)
		if n == nil {
			t.Fatalf("cannot read a metric name from %s", s)
		}
		var labels []string
		if l := labelsRE.FindStringSubmatch(s); l != nil && l[1] != "" {
			labels = strings.Split(l[1], ",")
		}
		out[n[1]] = labels
	}
	return out
}

// recorder is a prometheus.Registerer that keeps what is registered.
type recorder struct{ collectors []prometheus.Collector }

var _ prometheus.Registerer = (*recorder)(nil)

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}

func (r *recorder) Unregister(prometheus.Collector) bool { return false }
