{{- define "type" -}}
{{- $type := . -}}
{{- if markdownShouldRenderType $type }}
### {{ $type.Name }}
{{ if $type.GVK }}
A kind: `apiVersion: {{ $type.GVK.Group }}/{{ $type.GVK.Version }}`, `kind: {{ $type.GVK.Kind }}`.
{{ end }}
{{- if $type.IsAlias }}
{{- with $type.UnderlyingType }}
Of type _{{ markdownRenderTypeLink . }}_.
{{- else }}
Of type _map of resource name to quantity_ (a core/v1 ResourceList).
{{- end }}
{{ end }}
{{ $type.Doc }}
{{ if $type.Validation }}
Validation:
{{ range $type.Validation -}}
- {{ . }}
{{ end -}}
{{ end -}}
{{ if $type.References }}
Used in:{{ range $i, $r := $type.SortedReferences }}{{ if $i }},{{ end }} {{ markdownRenderTypeLink $r }}{{ end }}.
{{ end -}}
{{ if $type.Members }}
| Field | Type | Description | Default | Validation |
| --- | --- | --- | --- | --- |
{{ range $type.Members -}}
| `{{ .Name }}` | {{ markdownRenderType .Type }} | {{ template "type_members" . }} | {{ markdownRenderDefault .Default }} | {{ range $i, $v := .Validation }}{{ if $i }}<br />{{ end }}{{ markdownRenderFieldDoc ($v | replace ": {}" "") }}{{ end }} |
{{ end -}}
{{ end -}}
{{ if $type.EnumValues }}
| Value | Description |
| --- | --- |
{{ range $type.EnumValues -}}
| `{{ .Name }}` | {{ markdownRenderFieldDoc .Doc }} |
{{ end -}}
{{ end -}}
{{- end -}}
{{- end -}}
