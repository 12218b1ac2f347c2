package provisioning

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/component-base/metrics/legacyregistry"
)

// apiRequests counts the requests the API server in this process has answered, by verb and
// resource (with its subresource), from its own apiserver_request_total: every client's, the
// workload controllers', kwok's and the benchmark's as well as tailor-scheduler's, which the
// counting proxy sees alone. With the cores full, the API server's share of the CPU is spent on
// these, so they say who loads it.
func apiRequests() map[string]float64 {
	out := map[string]float64{}
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		if f.GetName() != "apiserver_request_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var verb, resource, sub string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "verb":
					verb = l.GetValue()
				case "resource":
					resource = l.GetValue()
				case "subresource":
					sub = l.GetValue()
				}
			}
			if sub != "" {
				resource += "/" + sub
			}
			out[verb+" "+resource] += m.GetCounter().GetValue()
		}
	}
	return out
}

// topRequests lists the most frequent requests counted in after and not in before, most first,
// with their share of all of them.
func topRequests(before, after map[string]float64, most int) string {
	type count struct {
		key string
		n   float64
	}
	var counts []count
	var total float64
	for k, n := range after {
		if d := n - before[k]; d > 0 {
			counts = append(counts, count{k, d})
			total += d
		}
	}
	sort.Slice(counts, func(i, j int) bool { return counts[i].n > counts[j].n })
	parts := []string{fmt.Sprintf("%.0f in all", total)}
	for _, c := range counts[:min(most, len(counts))] {
		parts = append(parts, fmt.Sprintf("%s %.0f (%.0f%%)", c.key, c.n, 100*c.n/total))
	}
	return strings.Join(parts, "; ")
}
