package userdata

import (
	"fmt"
	"sort"
	"strconv"
	gostrings "strings"
)

// A deliberately small TOML subset: tables ([a.b."c/d"]), and keys holding basic or literal
// strings, integers, floats, booleans, arrays of those (over several lines too) or inline tables.
// It is all Bottlerocket settings use, and it keeps the module free of a TOML dependency for one
// format.

func parseTOML(doc string) (map[string]any, error) {
	root := map[string]any{}
	cur := root
	lines := gostrings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		line := gostrings.TrimSpace(stripComment(lines[i]))
		// An array may run over several lines: read on until its brackets close.
		for start := i; unclosed(line) && i+1 < len(lines); {
			i++
			line += " " + gostrings.TrimSpace(stripComment(lines[i]))
			if i-start > 1000 {
				break
			}
		}
		if line == "" {
			continue
		}
		if gostrings.HasPrefix(line, "[") {
			if !gostrings.HasSuffix(line, "]") || gostrings.HasPrefix(line, "[[") {
				return nil, fmt.Errorf("line %d: unsupported table header %q", i+1, line)
			}
			path, err := splitKey(line[1 : len(line)-1])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			cur = table(root, path...)
			continue
		}
		k, v, ok := gostrings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: expected key = value, got %q", i+1, line)
		}
		path, err := splitKey(gostrings.TrimSpace(k))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		value, err := parseValue(gostrings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		table(cur, path[:len(path)-1]...)[path[len(path)-1]] = value
	}
	return root, nil
}

// stripComment drops a # comment that is outside quotes.
func stripComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0 && c == '\\' && quote == '"':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && c == '#':
			return line[:i]
		}
	}
	return line
}

// splitKey splits a dotted key, keeping quoted segments whole.
func splitKey(key string) ([]string, error) {
	var out []string
	for key = gostrings.TrimSpace(key); key != ""; {
		var seg string
		if key[0] == '"' || key[0] == '\'' {
			end := gostrings.IndexByte(key[1:], key[0])
			if end < 0 {
				return nil, fmt.Errorf("unterminated quoted key %q", key)
			}
			seg, key = key[1:end+1], key[end+2:]
		} else if i := gostrings.IndexByte(key, '.'); i >= 0 {
			seg, key = key[:i], key[i:]
		} else {
			seg, key = key, ""
		}
		out = append(out, gostrings.TrimSpace(seg))
		key = gostrings.TrimPrefix(gostrings.TrimSpace(key), ".")
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty key")
	}
	return out, nil
}

// unclosed reports whether a key = value line opens more brackets or braces than it closes.
func unclosed(line string) bool {
	if gostrings.HasPrefix(line, "[") {
		return false // a table header
	}
	depth := 0
	var quote byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0 && c == '\\' && quote == '"':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && (c == '[' || c == '{'):
			depth++
		case quote == 0 && (c == ']' || c == '}'):
			depth--
		}
	}
	return depth > 0
}

func parseValue(v string) (any, error) {
	switch {
	case gostrings.HasPrefix(v, "{") && gostrings.HasSuffix(v, "}"):
		out := map[string]any{}
		for _, item := range splitArray(v[1 : len(v)-1]) {
			k, val, ok := gostrings.Cut(item, "=")
			if !ok {
				return nil, fmt.Errorf("inline table item %q is not key = value", item)
			}
			path, err := splitKey(k)
			if err != nil {
				return nil, err
			}
			parsed, err := parseValue(gostrings.TrimSpace(val))
			if err != nil {
				return nil, err
			}
			table(out, path[:len(path)-1]...)[path[len(path)-1]] = parsed
		}
		return out, nil
	case gostrings.HasPrefix(v, `"`):
		return strconv.Unquote(v)
	case gostrings.HasPrefix(v, "'") && gostrings.HasSuffix(v, "'") && len(v) >= 2:
		return v[1 : len(v)-1], nil
	case v == "true" || v == "false":
		return v == "true", nil
	case gostrings.HasPrefix(v, "[") && gostrings.HasSuffix(v, "]"):
		var out []any
		for _, item := range splitArray(v[1 : len(v)-1]) {
			parsed, err := parseValue(item)
			if err != nil {
				return nil, err
			}
			out = append(out, parsed)
		}
		return out, nil
	default:
		if n, err := strconv.ParseInt(gostrings.ReplaceAll(v, "_", ""), 10, 64); err == nil {
			return n, nil
		}
		if f, err := strconv.ParseFloat(gostrings.ReplaceAll(v, "_", ""), 64); err == nil {
			return f, nil
		}
		return nil, fmt.Errorf("unsupported value %q", v)
	}
}

// splitArray splits array items on commas outside quotes and nested arrays or tables.
func splitArray(s string) []string {
	var (
		out   []string
		quote byte
		start int
		depth int
	)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0 && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && (c == '[' || c == '{'):
			depth++
		case quote == 0 && (c == ']' || c == '}'):
			depth--
		case quote == 0 && depth == 0 && c == ',':
			out = append(out, gostrings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if last := gostrings.TrimSpace(s[start:]); last != "" {
		out = append(out, last)
	}
	return out
}

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
	if len(scalars) > 0 && len(path) > 0 {
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
	for _, r := range k {
		if !bareKeyRune(r) {
			return strconv.Quote(k)
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
		return strconv.Quote(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []any:
		items := make([]string, len(v))
		for i, item := range v {
			items[i] = formatValue(item)
		}
		return "[" + gostrings.Join(items, ", ") + "]"
	default:
		return strconv.Quote(fmt.Sprint(v))
	}
}
