{{- define "gvDetails" -}}
{{- $gv := . -}}
## {{ $gv.GroupVersionString }}

{{ $gv.Doc }}
{{ range $gv.SortedTypes }}
{{- template "type" . }}
{{- end }}
{{- end -}}
