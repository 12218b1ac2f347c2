package budget

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// The CRD's patterns for a budget's nodes and duration (pkg/apis/karpenter/v1/nodepool.go):
// whatever the API server admits, Allowed must read.
var (
	crdNodes    = regexp.MustCompile(`^((100|[0-9]{1,2})%|[0-9]+)$`)
	crdDuration = regexp.MustCompile(`^((([0-9]{1,6}h)|([0-9]{1,7}m)|([0-9]{1,6}h[0-9]{1,7}m))(0s)?)$`)
)

// FuzzAllowed reads one budget as a NodePool's spec.disruption.budgets[0] carries it: nodes, a
// cron schedule and a duration as the API server stores them (schedule and duration empty mean
// unset). Properties: no panic; a value the CRD admits is read; an error names the NodePool, the
// budget and, for nodes, the field and its value; a percentage allows at most the pool's nodes;
// a count allows itself, up to the pool's nodes; a scheduled budget is active at the instant of each hit.
func FuzzAllowed(f *testing.F) {
	for _, s := range []struct {
		nodes, schedule, duration string
		total                     uint16
	}{
		{"10%", "", "", 11}, {"0", "@daily", "10m", 5}, {"3", "0 9 * * mon-fri", "8h", 50}, {"100%", "*/15 * * * *", "5m", 7},
		{"5", "@hourly", "1h30m", 9}, {"20%", "30 2 1 * *", "24h0m0s", 100}, {"ten", "", "", 3}, {"1", "61 * * * *", "1h", 2},
		{"99999999999999999999", "", "", 4}, {"1", "0 0 * * *", "1d", 1}, {"2", "TZ=UTC 0 0 * * *", "1h", 3},
	} {
		f.Add(s.nodes, s.schedule, s.duration, s.total, int64(1764000000))
	}
	f.Fuzz(func(t *testing.T, nodes, schedule, duration string, total uint16, unix int64) {
		b := karpv1.Budget{Nodes: nodes}
		if schedule != "" {
			b.Schedule = ptr.To(schedule)
		}
		if duration != "" {
			var d metav1.Duration
			raw, _ := json.Marshal(duration)
			if err := json.Unmarshal(raw, &d); err != nil {
				if crdDuration.MatchString(duration) {
					t.Fatalf("duration %q is admitted by the CRD but not read: %v", duration, err)
				}
				return // the API server would have refused the object
			}
			b.Duration = &d
		}
		pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "fuzz"}}
		pool.Spec.Disruption.Budgets = []karpv1.Budget{b}
		now := time.Unix(unix%(1<<40), 0).UTC()
		got, err := Allowed(pool, karpv1.DisruptionReasonUnderutilized, int(total), now)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "NodePool fuzz: spec.disruption.budgets[0]") {
				t.Fatalf("error does not name the NodePool and budget: %v", err)
			}
			if crdNodes.MatchString(nodes) && b.Schedule == nil {
				t.Fatalf("nodes %q is admitted by the CRD but not read: %v", nodes, err)
			}
			if _, nerr := nodesOf(nodes, int(total)); nerr != nil && !strings.Contains(err.Error(), ".nodes: ") {
				t.Fatalf("error does not name the nodes field: %v", err)
			} else if nerr == nil && !strings.Contains(err.Error(), "schedule") {
				t.Fatalf("error does not name the schedule: %v", err)
			}
			return
		}
		if got < 0 {
			t.Fatalf("allowed %d < 0", got)
		}
		if b.Schedule == nil {
			if want := budgetValue(nodes, int(total)); got != want {
				t.Fatalf("nodes %q of %d: allowed %d, want %d", nodes, total, got, want)
			}
		} else if sched, err := cron.ParseStandard(schedule); err != nil {
			t.Fatalf("schedule %q does not parse, yet the budget was read", schedule)
		} else if hit := sched.Next(now); !hit.IsZero() && b.Duration.Duration > 0 {
			// At the instant of a hit, a window of any positive length is open.
			atHit, err := Allowed(pool, karpv1.DisruptionReasonUnderutilized, int(total), hit)
			if want := budgetValue(nodes, int(total)); err != nil || atHit != want {
				t.Fatalf("at the schedule's hit %s the budget allows %d (%v), want %d", hit, atHit, err, want)
			}
		}
		if strings.HasSuffix(nodes, "%") && got > int(total) {
			t.Fatalf("nodes %q allows %d of %d nodes", nodes, got, total)
		}
	})
}

// budgetValue is what a budget's nodes allow, computed independently of nodes(): a percentage
// rounded up, or the count, at most the pool's nodes.
func budgetValue(nodes string, total int) int {
	if pct, ok := strings.CutSuffix(nodes, "%"); ok {
		p, _ := strconv.Atoi(pct)
		return int((int64(total)*int64(p) + 99) / 100)
	}
	n, err := strconv.ParseInt(nodes, 10, 64)
	if err != nil {
		return total // out of range: more than any pool has
	}
	return int(min(n, int64(total)))
}

// nodesOf is nodes, which the fuzz function's own parameter of that name hides.
var nodesOf = nodes
