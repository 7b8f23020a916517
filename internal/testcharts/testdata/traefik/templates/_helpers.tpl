{{- define "traefik.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "traefik.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}-{{ .Release.Namespace }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "traefik.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}-{{ .Release.Namespace }}
{{- end }}

{{/* The middleware CRD's group: one per release namespace, so tests stay apart. */}}
{{- define "traefik.group" -}}
traefik.{{ .Release.Namespace }}.test
{{- end }}
