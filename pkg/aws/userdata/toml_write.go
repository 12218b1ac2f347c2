package userdata

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	gostrings "strings"
)

// writeTOML emits tables depth-first with sorted keys, so equal settings give equal bytes.
func writeTOML(doc map[string]any) string {
	var b gostrings.Builder
	writeTable(&b, nil, doc)
	return b.String()
}

func writeTable(b *gostrings.Builder, path []string, t map[string]any) {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var scalars, tables []string
	for _, k := range keys {
		if _, ok := t[k].(map[string]any); ok {
			tables = append(tables, k)
		} else {
			scalars = append(scalars, k)
		}
	}
	// An empty table is written too: Bottlerocket treats a present, empty settings table
	// differently from an absent one for some settings, and a round trip must not drop it.
	if (len(scalars) > 0 || len(tables) == 0) && len(path) > 0 {
		fmt.Fprintf(b, "[%s]\n", joinKey(path))
	}
	for _, k := range scalars {
		fmt.Fprintf(b, "%s = %s\n", quoteKey(k), formatValue(t[k]))
	}
	if len(scalars) > 0 {
		b.WriteString("\n")
	}
	for _, k := range tables {
		writeTable(b, append(append([]string(nil), path...), k), t[k].(map[string]any))
	}
}

func joinKey(path []string) string {
	quoted := make([]string, len(path))
	for i, p := range path {
		quoted[i] = quoteKey(p)
	}
	return gostrings.Join(quoted, ".")
}

// quoteKey quotes a key unless TOML allows it bare (A-Za-z0-9_-).
func quoteKey(k string) string {
	if k == "" {
		return `""`
	}
	for _, r := range k {
		if !bareKeyRune(r) {
			return quoteString(k)
		}
	}
	return k
}

func bareKeyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return quoteString(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return formatFloat(v)
	case []any:
		items := make([]string, len(v))
		for i, item := range v {
			items[i] = formatValue(item)
		}
		return "[" + gostrings.Join(items, ", ") + "]"
	case map[string]any:
		// Tables inside arrays can only be written inline.
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		items := make([]string, len(keys))
		for i, k := range keys {
			items[i] = quoteKey(k) + " = " + formatValue(v[k])
		}
		return "{" + gostrings.Join(items, ", ") + "}"
	default:
		return quoteString(fmt.Sprint(v))
	}
}

// formatFloat writes a float so that it reads back as a float, not an integer, in TOML's
// spelling of the special values.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !gostrings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// quoteString writes a TOML basic string. Go's strconv.Quote is not used: its \x and \a escapes
// are not TOML, and Bottlerocket would refuse the document.
func quoteString(s string) string {
	var b gostrings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
