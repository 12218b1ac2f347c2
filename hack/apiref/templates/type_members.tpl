{{- define "type_members" -}}
{{- if eq .Name "metadata" -}}
The object's metadata (name, labels, annotations, ...), as for every Kubernetes object.
{{- else -}}
{{ markdownRenderFieldDoc .Doc }}
{{- end -}}
{{- end -}}
