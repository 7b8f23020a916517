package testcharts

import "path"

// GuestbookValues is the values file GuestbookChart writes outside the
// chart: replicaCount 2.
const GuestbookValues = "env/prod.yaml"

// GuestbookChart returns the files (slash-separated path → content) of a
// helm-guestbook-like chart at dir of a work tree, the one the agent's and
// the CLI's chart tests start from: helpers, toYaml of empty maps and
// lists, a test hook, NOTES.txt; a values file elsewhere in the tree
// (GuestbookValues) and a CI file beside the chart. It returns a fresh map
// on every call, and it is not one of Names (those are compared with helm
// template). Release RELEASE renders Deployment and Service
// RELEASE-guestbook (port service.port, 80 by default; replicas
// replicaCount, 1 by default) and the test hook Pod RELEASE-guestbook-ping.
func GuestbookChart(dir string) map[string]string {
	at := func(name string) string { return path.Join(dir, name) }
	return map[string]string{
		at("Chart.yaml"):  "apiVersion: v2\nname: guestbook\nversion: 0.1.0\nappVersion: \"1.27\"\n",
		at("values.yaml"): "replicaCount: 1\nservice:\n  port: 80\nresources: {}\nnodeSelector: {}\ntolerations: []\npodAnnotations: {}\n",
		at("templates/_helpers.tpl"): `{{- define "gb.fullname" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}
{{- define "gb.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}`,
		at("templates/deployment.yaml"): `apiVersion: apps/v1
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
      {{- with .Values.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
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
		at("templates/service.yaml"): `apiVersion: v1
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
		at("templates/tests/ping.yaml"):            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ include \"gb.fullname\" . }}-ping\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers: [{name: p, image: busybox}]\n",
		at("templates/NOTES.txt"):                  "Visit {{ include \"gb.fullname\" . }}.\n",
		GuestbookValues:                            "replicaCount: 2\n",
		path.Join(path.Dir(dir), ".gitlab-ci.yml"): "stages: [lint]\n",
	}
}
