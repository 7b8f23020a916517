{{/* Chart name, cut to the 63 characters a label value may hold. */}}
{{- define "gitsync.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of the release's objects. */}}
{{- define "gitsync.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gitsync.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object of the release. */}}
{{- define "gitsync.labels" -}}
helm.sh/chart: {{ include "gitsync.chart" . }}
{{ include "gitsync.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the agent's Pods; never change them after a release. */}}
{{- define "gitsync.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gitsync.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gitsync.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gitsync.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference, tag defaulting to the chart's appVersion. */}}
{{- define "gitsync.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
Namespaces that hold GitSyncs (Secrets read, ServiceAccounts impersonated), one per line: the release
namespace, the watched namespace, the namespaces of GitSyncs and credential
Secrets from values, and rbac.gitSyncNamespaces. Deduplicated and sorted.
*/}}
{{- define "gitsync.gitSyncNamespaces" -}}
{{- $ns := list .Release.Namespace }}
{{- with .Values.agent.watchNamespace }}{{ $ns = append $ns . }}{{ end }}
{{- range .Values.gitSyncs }}{{ $ns = append $ns (.namespace | default $.Release.Namespace) }}{{ end }}
{{- range .Values.repoCredentials }}{{ $ns = append $ns (.namespace | default $.Release.Namespace) }}{{ end }}
{{- range .Values.rbac.gitSyncNamespaces }}{{ $ns = append $ns . }}{{ end }}
{{- range ($ns | uniq | sortAlpha) }}
{{ . }}
{{- end }}
{{- end }}
