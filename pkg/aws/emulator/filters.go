package emulator

import (
	"path"
	"sort"
	"strings"
)

// filter is one EC2 Filter: the resource matches when any value matches the named attribute.
type filter struct {
	name   string
	values []string
}

func parseFilters(q query) []filter {
	var out []filter
	for _, f := range q.items("Filter") {
		out = append(out, filter{name: f.get("Name"), values: f.list("Value")})
	}
	return out
}

// attributes returns a resource's values for a filter name, and false for a name the resource
// type does not support (which EC2 rejects).
type attributes func(name string) ([]string, bool)

// matches ANDs the filters, ORs each filter's values, and honours EC2's * and ? wildcards.
func matches(filters []filter, attrs attributes) (bool, error) {
	for _, f := range filters {
		have, ok := attrs(f.name)
		if !ok {
			return false, invalidParameter("The filter '%s' is invalid", f.name)
		}
		if !anyMatch(f.values, have) {
			return false, nil
		}
	}
	return true, nil
}

func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if ok, _ := path.Match(p, v); ok || p == v {
				return true
			}
		}
	}
	return false
}

// tagAttributes answers tag:<key> and tag-key filters, which every taggable resource supports.
func tagAttributes(tags map[string]string, name string) ([]string, bool) {
	if key, ok := strings.CutPrefix(name, "tag:"); ok {
		if v, ok := tags[key]; ok {
			return []string{v}, true
		}
		return nil, true
	}
	if name == "tag-key" {
		return sortedKeys(tags), true
	}
	return nil, false
}

// filterSlice keeps the items that match, or returns the first filter error.
func filterSlice[T any](items []T, filters []filter, attrs func(T) attributes) ([]T, error) {
	var out []T
	for _, item := range items {
		ok, err := matches(filters, attrs(item))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, item)
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func copyTags(tags map[string]string) map[string]string {
	out := make(map[string]string, len(tags))
	for k, v := range tags {
		out[k] = v
	}
	return out
}
