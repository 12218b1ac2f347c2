package harness

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// evidence returns the events about the objects the findings name (the pod or node, and for a
// node its NodeClaim) and the related ones, oldest first, for the failure report.
func evidence(ctx context.Context, cluster *sandbox.Cluster, r *Reading, findings []Finding, related []string) string {
	names := map[string]bool{}
	for _, name := range related {
		names[name] = true
	}
	for _, f := range findings {
		name := f.Object[strings.LastIndex(f.Object, "/")+1:]
		names[name] = true
		if claim, ok := r.launched()[name]; ok {
			names[claim.Name] = true
		}
	}
	events, err := cluster.Kube.EventsV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "events: " + err.Error()
	}
	var lines []string
	for _, ev := range events.Items {
		if !names[ev.Regarding.Name] {
			continue
		}
		t := eventTime(ev.EventTime.Time, ev.DeprecatedLastTimestamp.Time)
		lines = append(lines, fmt.Sprintf("%s %s %s %s: %s", t.Format("15:04:05.000"), ev.Regarding.Kind, ev.Regarding.Name, ev.Reason, ev.Note))
	}
	sort.Strings(lines)
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	for _, c := range r.Claims {
		if names[c.Name] {
			for _, cond := range c.Status.Conditions {
				lines = append(lines, fmt.Sprintf("NodeClaim %s condition %s=%s %s: %s", c.Name, cond.Type, cond.Status, cond.Reason, cond.Message))
			}
		}
	}
	return strings.Join(lines, "\n  ")
}

func eventTime(t, deprecated time.Time) time.Time {
	if t.IsZero() {
		return deprecated
	}
	return t
}
