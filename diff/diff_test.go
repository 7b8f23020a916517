package diff_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/diff"
	"gitsync.dev/gitsync/internal/testenv"
)

const configMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  namespace: NS
  labels: {gitsync.dev/name: app, gitsync.dev/namespace: NS, tier: web}
  annotations: {note: hello}
data: {a: "1", b: two}
`

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: NS, labels: {gitsync.dev/name: app}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        args: [--port, "8080"]
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        ports: [{containerPort: 8080}, {containerPort: 9090, protocol: UDP}]
        resources: {requests: {cpu: 500m, memory: 64Mi}}
      - name: sidecar
        image: busybox
`

// generatedDeployment is shaped like `kubectl create deployment -o yaml`
// output: null timestamps and empty resources.
const generatedDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: gen, namespace: NS, creationTimestamp: null}
spec:
  selector: {matchLabels: {app: gen}}
  template:
    metadata: {creationTimestamp: null, labels: {app: gen}}
    spec:
      containers: [{name: c, image: busybox, resources: {}}]
`

const service = `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: NS}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: dns, port: 53, protocol: UDP, targetPort: dns}
`

const secret = `
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: NS}
stringData: {password: hunter2-plaintext}
data: {token: c2VjcmV0LXRva2Vu}
`

// differ returns a Differ whose requests are counted.
func differ(t *testing.T, opts diff.Options) (*diff.Differ, *testenv.RequestCounter) {
	t.Helper()
	c, ct := countingClient(t)
	d, err := diff.New(c, opts)
	if err != nil {
		t.Fatalf("diff.New: %v", err)
	}
	return d, ct
}

// diffCounted runs one Diff and returns its result and the requests it made.
func diffCounted(t *testing.T, d *diff.Differ, ct *testenv.RequestCounter, desired, live *unstructured.Unstructured) (diff.Result, int64) {
	t.Helper()
	before := ct.All.Load()
	res, err := d.Diff(context.Background(), desired, live)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	return res, ct.All.Load() - before
}

func TestDiffFastPathInSync(t *testing.T) {
	tests := []struct{ name, manifest string }{
		{"configmap", configMap},
		{"deployment", deployment},
		{"service", service},
		{"secret with stringData and data", secret},
		{"kubectl-generated deployment with null timestamps", generatedDeployment},
		{"empty data and finalizer set", `
apiVersion: v1
kind: ConfigMap
metadata: {name: empty, namespace: NS, creationTimestamp: null, finalizers: [example.com/keep]}
data: {}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			desired := decode(t, tt.manifest, ns)
			live := applyAs(t, desired, "gitsync")
			d, ct := differ(t, diff.DefaultOptions())

			res, requests := diffCounted(t, d, ct, desired, live)
			if res.Verdict != diff.InSync || res.DryRun || res.Merged != nil || res.Text != "" {
				t.Errorf("Diff = %+v, want in-sync decided locally", res)
			}
			if requests != 0 {
				t.Errorf("Diff made %d requests, want 0", requests)
			}
		})
	}
}

func TestDiffMissing(t *testing.T) {
	ns := env.Namespace(t)
	d, ct := differ(t, diff.Options{FieldManager: "gitsync", Text: true})
	desired := decode(t, secret, ns)

	res, requests := diffCounted(t, d, ct, desired, nil)
	if res.Verdict != diff.Missing || requests != 0 {
		t.Errorf("Diff = %+v with %d requests, want missing without requests", res, requests)
	}
	if !strings.Contains(res.Text, "+  password: '***'") || strings.Contains(res.Text, "hunter2") {
		t.Errorf("Text does not show the masked Secret:\n%s", res.Text)
	}
}

func TestDiffNormalisedViaDryRunThenMemoised(t *testing.T) {
	ns := env.Namespace(t)
	desired := decode(t, `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: NS}
spec:
  containers:
  - name: c
    image: busybox
    resources: {requests: {cpu: "0.5", memory: 1024Mi}}
`, ns)
	live := applyAs(t, desired, "gitsync")
	d, ct := differ(t, diff.DefaultOptions())

	res, requests := diffCounted(t, d, ct, desired, live)
	if res.Verdict != diff.InSync || !res.DryRun || res.Memoised || requests == 0 {
		t.Fatalf("first Diff = %+v with %d requests, want in-sync by a dry-run", res, requests)
	}
	res, requests = diffCounted(t, d, ct, desired, live)
	if res.Verdict != diff.InSync || !res.Memoised || requests != 0 {
		t.Errorf("second Diff = %+v with %d requests, want memoised in-sync without requests", res, requests)
	}

	// A status-only change, as a kubelet or controller makes all the time,
	// keeps the memo: the verdict does not depend on it.
	status := decode(t, `{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: NS}, status: {message: "scheduled soon"}}`, ns)
	if err := env.Client.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(status),
		client.FieldOwner("kubelet"), client.ForceOwnership); err != nil {
		t.Fatalf("status apply: %v", err)
	}
	withStatus := get(t, desired)
	if withStatus.GetResourceVersion() == live.GetResourceVersion() {
		t.Fatal("test bug: the status change did not change the resourceVersion")
	}
	res, requests = diffCounted(t, d, ct, desired, withStatus)
	if res.Verdict != diff.InSync || !res.Memoised || requests != 0 {
		t.Errorf("Diff after a status-only change = %+v with %d requests, want memoised in-sync without requests", res, requests)
	}

	// A new live version is judged again.
	label := decode(t, `{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: NS, labels: {x: "y"}}}`, ns)
	live = applyAs(t, label, "someone-else")
	res, requests = diffCounted(t, d, ct, desired, live)
	if res.Verdict != diff.InSync || res.Memoised || requests == 0 {
		t.Errorf("Diff after a live change = %+v with %d requests, want a fresh dry-run", res, requests)
	}
}

func TestDiffDrifted(t *testing.T) {
	tests := []struct {
		name     string
		applied  string
		desired  string
		wantText []string // lines the diff text must contain
	}{
		{
			name:     "changed value",
			applied:  configMap,
			desired:  strings.Replace(configMap, "b: two", "b: three", 1),
			wantText: []string{"-  b: two", "+  b: three"},
		},
		{
			name:     "field removed from git",
			applied:  configMap,
			desired:  strings.Replace(configMap, ", tier: web", "", 1),
			wantText: []string{"-    tier: web"},
		},
		{
			name:     "annotation removed from git",
			applied:  configMap,
			desired:  strings.Replace(configMap, "  annotations: {note: hello}\n", "", 1),
			wantText: []string{"-    note: hello"},
		},
		{
			name:     "field added in git",
			applied:  configMap,
			desired:  strings.Replace(configMap, "b: two", "b: two, c: new", 1),
			wantText: []string{"+  c: new"},
		},
		{
			name:     "quantity changed",
			applied:  deployment,
			desired:  strings.Replace(deployment, "cpu: 500m", `cpu: "0.6"`, 1),
			wantText: []string{"-            cpu: 500m", "+            cpu: 600m"},
		},
		{
			name:     "container removed",
			applied:  deployment,
			desired:  strings.Replace(deployment, "      - name: sidecar\n        image: busybox\n", "", 1),
			wantText: []string{"-      - image: busybox"},
		},
		{
			name:     "list item reordered",
			applied:  deployment,
			desired:  strings.Replace(deployment, "[{name: A, value: \"1\"}, {name: B, value: \"2\"}]", "[{name: B, value: \"2\"}, {name: A, value: \"1\"}]", 1),
			wantText: []string{"name: A"},
		},
		{
			name:     "port protocol changed",
			applied:  service,
			desired:  strings.Replace(service, "{name: http, port: 80, targetPort: 8080}", "{name: http, port: 80, protocol: SCTP, targetPort: 8080}", 1),
			wantText: []string{"+    protocol: SCTP"},
		},
		{
			name:     "int-or-string port changed",
			applied:  service,
			desired:  strings.Replace(service, "targetPort: 8080", `targetPort: "http"`, 1),
			wantText: []string{"-    targetPort: 8080", "+    targetPort: http"},
		},
		{
			name:     "secret value changed",
			applied:  secret,
			desired:  strings.Replace(secret, "hunter2-plaintext", "correct-horse", 1),
			wantText: []string{"-  password: '*** (before)'", "+  password: '*** (after)'"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			live := applyAs(t, decode(t, tt.applied, ns), "gitsync")
			d, ct := differ(t, diff.Options{FieldManager: "gitsync", Text: true, MemoSize: 10})

			res, _ := diffCounted(t, d, ct, decode(t, tt.desired, ns), live)
			if res.Verdict != diff.Drifted || !res.DryRun || res.Merged == nil {
				t.Fatalf("Diff = %+v, want drifted by a dry-run", res)
			}
			for _, want := range tt.wantText {
				if !strings.Contains(res.Text, want) {
					t.Errorf("Text lacks %q:\n%s", want, res.Text)
				}
			}
			assertNoSecretValues(t, res)
		})
	}
}

func TestDiffSecretNeverShowsValues(t *testing.T) {
	ns := env.Namespace(t)
	live := applyAs(t, decode(t, secret, ns), "gitsync")
	desired := decode(t, `
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: NS, annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"stringData":{"password":"correct-horse"}}'}}
stringData: {password: correct-horse, extra: battery-staple}
data: {token: c2VjcmV0LXRva2Vu}
`, ns)
	d, ct := differ(t, diff.Options{FieldManager: "gitsync", Text: true})

	res, _ := diffCounted(t, d, ct, desired, live)
	if res.Verdict != diff.Drifted {
		t.Fatalf("Verdict = %s, want drifted", res.Verdict)
	}
	for _, want := range []string{"'*** (before)'", "'*** (after)'", "+  extra: '***'", "  token: '***'"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("Text lacks %q:\n%s", want, res.Text)
		}
	}
	assertNoSecretValues(t, res)
}

// assertNoSecretValues fails when a Secret value of the fixtures, plain or
// base64, appears in the text or the merged object.
func assertNoSecretValues(t *testing.T, res diff.Result) {
	t.Helper()
	merged, err := json.Marshal(res.Merged)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"hunter2", "aHVudGVyMi", "correct-horse", "Y29ycmVjdC1ob3Jz", "battery-staple", "c2VjcmV0LXRva2Vu", "secret-token"} {
		if strings.Contains(res.Text, v) || strings.Contains(string(merged), v) {
			t.Errorf("Secret value %q leaked:\n%s\n%s", v, res.Text, merged)
		}
	}
}

func TestDiffFieldTakenByKubectlEdit(t *testing.T) {
	ns := env.Namespace(t)
	desired := decode(t, configMap, ns)
	applyAs(t, desired, "gitsync")
	edited := get(t, desired)
	if err := unstructured.SetNestedField(edited.Object, "edited", "data", "b"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Update(context.Background(), edited, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatalf("kubectl-edit update: %v", err)
	}
	live := get(t, desired)
	d, ct := differ(t, diff.Options{FieldManager: "gitsync", Text: true})

	res, _ := diffCounted(t, d, ct, desired, live)
	if res.Verdict != diff.Drifted {
		t.Fatalf("Verdict = %s, want drifted", res.Verdict)
	}
	for _, want := range []string{"-  b: edited", "+  b: two", "# gitsync takes .data.b from kubectl-edit"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("Text lacks %q:\n%s", want, res.Text)
		}
	}

	// Git now agrees with the edit: the values match, but gitsync does not own
	// the field, so an apply would still write (take it back).
	agreeing := decode(t, strings.Replace(configMap, "b: two", "b: edited", 1), ns)
	res, _ = diffCounted(t, d, ct, agreeing, live)
	if res.Verdict != diff.Drifted || !strings.Contains(res.Text, "# gitsync takes .data.b from kubectl-edit") {
		t.Errorf("Diff with Git agreeing with the edit = %+v, want drifted on ownership only", res)
	}
}
