package chart_test

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

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
		checkExpr(t, "alert "+name, a["expr"].(string), registered)
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

// checkExpr fails unless every gitsync metric in expr (of what: an alert or
// a panel) is one the agent registers and every label the expression names
// is one of its labels.
func checkExpr(t *testing.T, what, expr string, registered map[string][]string) {
	t.Helper()
	names := metricRE.FindAllString(expr, -1)
	if len(names) == 0 {
		t.Errorf("%s: no gitsync metric in %q", what, expr)
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
		// A histogram's series: its buckets add the label le.
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if base, cut := strings.CutSuffix(n, suffix); !ok && cut {
				if have, ok = registered[base]; ok && suffix == "_bucket" {
					have = append(slices.Clone(have), "le")
				}
			}
		}
		if !ok {
			t.Errorf("%s uses %s, which the agent does not register", what, n)
			continue
		}
		for _, l := range labels {
			if !slices.Contains(have, l) {
				t.Errorf("%s uses label %s of %s, which has only %v", what, l, n, have)
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
	if err := metrics.CountAPIRequests(&rest.Config{}, reg); err != nil {
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

// TestGrafanaDashboard renders the opt-in dashboard and checks it is a
// dashboard Grafana's sidecar loads (a labelled ConfigMap of one JSON file)
// whose every query asks for metrics and labels the agent really registers,
// and that it is off by default.
func TestGrafanaDashboard(t *testing.T) {
	const ns = "gitsync-system"
	if slices.ContainsFunc(template(t, "gs", ns), func(o *unstructured.Unstructured) bool { return o.GetName() == "gs-gitsync-dashboard" }) {
		t.Error("the dashboard is rendered by default; it is opt-in")
	}
	objs := template(t, "gs", ns, "--set", "metrics.grafanaDashboard.enabled=true,metrics.grafanaDashboard.namespace=monitoring")
	cm := find(t, objs, "ConfigMap", "monitoring", "gs-gitsync-dashboard")
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("labels %v: want grafana_dashboard=1, the sidecar's default", cm.GetLabels())
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if len(data) != 1 || data["gitsync.json"] == "" {
		t.Fatalf("data keys %v: want gitsync.json alone", slices.Collect(maps.Keys(data)))
	}
	var dash struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource *struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			GridPos struct{ W, H int } `json:"gridPos"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(data["gitsync.json"]), &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if dash.UID == "" {
		t.Error("no uid: each sidecar reload would make a new dashboard")
	}
	vars := map[string]bool{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
	}
	for _, v := range []string{"datasource", "namespace", "name"} {
		if !vars[v] {
			t.Errorf("no variable %s", v)
		}
	}
	registered := agentMetrics(t)
	ids, queries := map[int]bool{}, 0
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %q has no size", p.Title)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not use the datasource variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			queries++
			checkExpr(t, "panel "+p.Title, q.Expr, registered)
		}
	}
	if queries < 10 {
		t.Errorf("%d queries: the dashboard lost its panels", queries)
	}
}
