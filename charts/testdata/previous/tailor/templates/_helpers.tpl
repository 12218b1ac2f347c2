{{/* The chart's name, or nameOverride. */}}
{{- define "tailor.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name: the release name, with the chart's name appended unless the release name already
holds it. Truncated to 63 characters, a DNS label, since it names the Service.
*/}}
{{- define "tailor.fullname" -}}
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

{{- define "tailor.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "tailor.labels" -}}
helm.sh/chart: {{ include "tailor.chart" . }}
{{ include "tailor.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels that select Tailor's pods. */}}
{{- define "tailor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tailor.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tailor.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tailor.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false: name the ServiceAccount Tailor runs as" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image: repository:tag, with @digest when a digest is set. The tag defaults to appVersion. */}}
{{- define "tailor.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The Secret Tailor keeps the webhook's certificate in (it, or cert-manager, writes it). */}}
{{- define "tailor.webhookCertSecret" -}}
{{- printf "%s-webhook-cert" (include "tailor.fullname" .) }}
{{- end }}

{{/*
"true" when the webhook's certificate comes from cert-manager: webhook.certManager.enabled true,
or auto and the cluster serves cert-manager.io/v1. Empty otherwise.
*/}}
{{- define "tailor.certManager" -}}
{{- $enabled := .Values.webhook.certManager.enabled }}
{{- if not .Values.webhook.enabled }}
{{- else if eq (toString $enabled) "auto" }}
{{- if .Capabilities.APIVersions.Has "cert-manager.io/v1" }}true{{ end }}
{{- else if eq (toString $enabled) "true" }}true
{{- else if ne (toString $enabled) "false" }}
{{- fail (printf "webhook.certManager.enabled is %q: use true, false or auto" (toString $enabled)) }}
{{- end }}
{{- end }}

{{/* The Tailor plugin's args, checked against the names the plugin knows. */}}
{{- define "tailor.pluginArgs" -}}
{{- $known := list "batchIdleDuration" "batchMaxDuration" "consolidationValidationPeriod" "disruptionPollInterval" "spotToSpotMinInstanceTypes" "minValuesPolicy" "strandedAfter" "nodeRepair" "terminationWorkers" "nodeClaimWorkers" }}
{{- range $key, $_ := .Values.settings.pluginArgs }}
{{- if not (has $key $known) }}
{{- fail (printf "settings.pluginArgs.%s: the Tailor plugin has no such arg; it knows %s" $key (join ", " $known)) }}
{{- end }}
{{- end }}
{{- toYaml .Values.settings.pluginArgs }}
{{- end }}

{{/* logLevel as --v takes it: a klog verbosity, a whole number. */}}
{{- define "tailor.logLevel" -}}
{{- $level := toString .Values.logLevel }}
{{- if not (regexMatch "^[0-9]+$" $level) }}
{{- fail (printf "logLevel is %q: a klog verbosity, 0 to 10 (2 is kube-scheduler's usual, 4 debug)" $level) }}
{{- end }}
{{- $level }}
{{- end }}
