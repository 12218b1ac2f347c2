package userdata

import (
	"fmt"
	"strconv"
	gostrings "strings"
	"unicode/utf8"
)

// A deliberately small TOML subset: tables ([a.b."c/d"]), and keys holding basic or literal
// strings, integers, floats, booleans, arrays of those (over several lines too) or inline tables.
// It is all Bottlerocket settings use, and it keeps the module free of a TOML dependency for one
// format.

func parseTOML(doc string) (map[string]any, error) {
	if !utf8.ValidString(doc) {
		return nil, fmt.Errorf("the document is not valid UTF-8, as TOML must be")
	}
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
		k, v, ok := cutKeyValue(line)
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

// splitKey splits a dotted key, keeping quoted segments whole: a basic ("...") segment has its
// escapes read, a literal ('...') one is taken as written.
func splitKey(key string) ([]string, error) {
	var out []string
	for key = gostrings.TrimSpace(key); key != ""; {
		var seg string
		if key[0] == '"' || key[0] == '\'' {
			end := closingQuote(key)
			if end < 0 {
				return nil, fmt.Errorf("unterminated quoted key %q", key)
			}
			quoted := key[:end+1]
			seg, key = quoted[1:end], gostrings.TrimSpace(key[end+1:])
			if quoted[0] == '"' {
				var err error
				if seg, err = unquoteBasic(quoted); err != nil {
					return nil, fmt.Errorf("quoted key %s: %w", quoted, err)
				}
			}
			if key != "" && key[0] != '.' {
				return nil, fmt.Errorf("unexpected %q after a quoted key", key)
			}
		} else if i := gostrings.IndexByte(key, '.'); i >= 0 {
			seg, key = gostrings.TrimSpace(key[:i]), key[i:]
		} else {
			seg, key = gostrings.TrimSpace(key), ""
		}
		out = append(out, seg)
		key = gostrings.TrimPrefix(key, ".")
		key = gostrings.TrimSpace(key)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty key")
	}
	return out, nil
}

// closingQuote returns the index of the quote that closes the string opening s, or -1; only
// basic strings have backslash escapes.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch {
		case s[0] == '"' && s[i] == '\\':
			i++
		case s[i] == s[0]:
			return i
		}
	}
	return -1
}

// cutKeyValue splits "key = value" at the first "=" outside a quoted key.
func cutKeyValue(line string) (key, value string, ok bool) {
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '"', '\'':
			end := closingQuote(line[i:])
			if end < 0 {
				return "", "", false
			}
			i += end
		case '=':
			return line[:i], line[i+1:], true
		}
	}
	return "", "", false
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
			k, val, ok := cutKeyValue(item)
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
		return unquoteBasic(v)
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
		case quote == '"' && c == '\\':
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

// unquoteBasic reads a basic string. Its escapes are read as Go reads them, and a result that is
// not UTF-8 is refused: TOML strings are Unicode, and Go's \x escapes write single bytes (TOML
// 1.1's \xHH names a code point), which the writer would then have to replace.
func unquoteBasic(quoted string) (string, error) {
	s, err := strconv.Unquote(quoted)
	if err != nil {
		return "", err
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("string %s is not UTF-8 once its escapes are read", quoted)
	}
	return s, nil
}
