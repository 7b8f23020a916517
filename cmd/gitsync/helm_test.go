package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// guestbookChart is a helm-guestbook-like chart (helpers, toYaml of empty
// maps, a test hook, NOTES.txt) at charts/web of a work tree, with a values
// file elsewhere in it and a CI file beside the chart.
var guestbookChart = map[string]string{
	"charts/web/Chart.yaml":  "apiVersion: v2\nname: guestbook\nversion: 0.1.0\nappVersion: \"1.27\"\n",
	"charts/web/values.yaml": "replicaCount: 1\nservice:\n  port: 80\nresources: {}\nnodeSelector: {}\ntolerations: []\n",
	"charts/web/templates/_helpers.tpl": `{{- define "gb.fullname" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}
{{- define "gb.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}`,
	"charts/web/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "gb.fullname" . }}
  labels:
    {{- include "gb.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      {{- include "gb.labels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "gb.labels" . | nindent 8 }}
    spec:
      containers:
        - name: web
          image: "nginx:{{ .Chart.AppVersion }}"
          ports:
            - name: http
              containerPort: 80
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
`,
	"charts/web/templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ include "gb.fullname" . }}
  namespace: {{ .Release.Namespace }}
spec:
  type: ClusterIP
  ports:
    - port: {{ .Values.service.port }}
      targetPort: http
  selector:
    {{- include "gb.labels" . | nindent 4 }}
`,
	"charts/web/templates/tests/ping.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ include \"gb.fullname\" . }}-ping\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers: [{name: p, image: busybox}]\n",
	"charts/web/templates/NOTES.txt":       "Visit {{ include \"gb.fullname\" . }}.\n",
	"env/prod.yaml":                        "replicaCount: 2\n",
	"charts/.gitlab-ci.yml":                "stages: [lint]\n",
}

// TestHelmChartApplyThenDiff: a chart directory renders like helm template
// (release name from --name, values file and --helm-set), applies, and then
// diffs in sync: helm's rendered empty maps and labels leave no difference.
func TestHelmChartApplyThenDiff(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	writeFiles(t, dir, guestbookChart)
	chart := filepath.Join(dir, "charts", "web")
	flags := []string{"--name", "shop", "--helm-values", filepath.Join(dir, "env", "prod.yaml"), "--helm-set", "service.port=8080"}

	r := gitsyncIn(t, ns, append([]string{"diff", chart}, flags...)...)
	wantCode(t, r, 1)
	want := []string{
		"+ Deployment/" + ns + "/shop-guestbook (create)",
		"+ Service/" + ns + "/shop-guestbook (create)",
	}
	got := changeLines(r.stdout)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("before apply (-want +got):\n%s\n%s", diff, r)
	}

	r = gitsyncIn(t, ns, append([]string{"apply", chart}, flags...)...)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "2 created") {
		t.Errorf("apply summary lacks \"2 created\":\n%s", r)
	}
	r = gitsyncIn(t, ns, append([]string{"diff", chart}, flags...)...)
	wantCode(t, r, 0)
	if got := changeLines(r.stdout); len(got) != 0 {
		t.Errorf("apply then diff: want no differences, got %q\n%s", got, r)
	}

	// A new value is a difference again, in the field it sets.
	r = gitsyncIn(t, ns, "diff", chart, "--name", "shop", "--helm-values", filepath.Join(dir, "env", "prod.yaml"), "--helm-set", "service.port=9090")
	wantCode(t, r, 1)
	if !strings.Contains(r.stdout, "9090") {
		t.Errorf("--helm-set service.port=9090: diff does not show it:\n%s", r)
	}
}

// TestHelmValuesConfined: a values file outside the render's root is
// refused, naming it, before anything is read or sent.
func TestHelmValuesConfined(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	writeFiles(t, dir, guestbookChart)
	outside := filepath.Join(t.TempDir(), "values.yaml")
	writeFiles(t, filepath.Dir(outside), map[string]string{"values.yaml": "replicaCount: 9\n"})
	r := gitsync(t, "diff", filepath.Join(dir, "charts", "web"), "--helm-values", outside)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "--helm-values "+outside+" lies outside "+dir) {
		t.Errorf("want a refusal naming the file and the root:\n%s", r)
	}
}

// TestIgnoreFlagsAndFiles: a plain directory with files that are not
// objects renders once they are ignored: a CI file by default, a values file
// by .gitsyncignore, a draft by --ignore.
func TestIgnoreFlagsAndFiles(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cm.yaml":                 configMap("a", "k", "v"),
		"bitbucket-pipelines.yml": "pipelines: {}\n",
		"values.yaml":             "replicas: 3\n",
		".gitsyncignore":          "values.yaml\n",
		"draft.yaml":              "kind: [\n",
	})
	r := gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "draft.yaml") {
		t.Errorf("without --ignore the draft stalls the render, naming it:\n%s", r)
	}
	r = gitsyncIn(t, ns, "diff", dir, "--ignore", "draft.yaml")
	wantCode(t, r, 1)
	if diff := cmp.Diff([]string{"+ ConfigMap/" + ns + "/a (create)"}, changeLines(r.stdout)); diff != "" {
		t.Errorf("(-want +got):\n%s\n%s", diff, r)
	}
}
