// Package budget reads a NodePool's disruption budgets (spec.disruption.budgets: a count or
// percentage of nodes, a cron schedule and a duration, reasons) into how many of its nodes may
// be disrupting at a given time. It is pure, so the disruption loop and the fuzz targets share it.
package budget

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// defaultBudget is what a NodePool without budgets gets, as the CRD defaults it.
var defaultBudget = karpv1.Budget{Nodes: "10%"}

// Allowed returns how many of a pool's nodes may be disrupting at the same time for reason, at
// now, when the pool has total nodes: the least of its active budgets that apply to the reason,
// and never more than total.
// A budget that cannot be read allows nothing (and the error says which one), so a typo never
// opens the gates.
func Allowed(pool *karpv1.NodePool, reason karpv1.DisruptionReason, total int, now time.Time) (int, error) {
	budgets := pool.Spec.Disruption.Budgets
	if len(budgets) == 0 {
		budgets = []karpv1.Budget{defaultBudget}
	}
	allowed := math.MaxInt
	for i, b := range budgets {
		if len(b.Reasons) > 0 && !contains(b.Reasons, reason) {
			continue
		}
		// The count is read first, so a typo in a budget whose window is closed shows now, not
		// when the window opens.
		n, err := nodes(b.Nodes, total)
		if err != nil {
			return 0, fmt.Errorf("NodePool %s: spec.disruption.budgets[%d].nodes: %w", pool.Name, i, err)
		}
		active, err := isActive(b, now)
		if err != nil {
			return 0, fmt.Errorf("NodePool %s: spec.disruption.budgets[%d]: %w", pool.Name, i, err)
		}
		if !active {
			continue
		}
		allowed = min(allowed, n)
	}
	// No more than the pool's nodes can be disrupting, whatever a count says; with no budget
	// active for this reason, nothing else limits it.
	return min(allowed, total), nil
}

// isActive reports whether now is inside one of the budget's windows: the schedule's next hit
// after now-duration is not later than now. A budget without a schedule is always active.
func isActive(b karpv1.Budget, now time.Time) (bool, error) {
	if b.Schedule == nil {
		return true, nil
	}
	if b.Duration == nil {
		return false, fmt.Errorf("schedule %q has no duration", *b.Schedule)
	}
	sched, err := cron.ParseStandard(*b.Schedule)
	if err != nil {
		return false, fmt.Errorf("schedule %q: %w", *b.Schedule, err)
	}
	now = now.UTC()
	next := sched.Next(now.Add(-b.Duration.Duration))
	return !next.After(now), nil
}

// nodes reads a budget's nodes: a count, or a percentage of total rounded up (as a PDB's
// maxUnavailable is).
func nodes(value string, total int) (int, error) {
	if pct, ok := strings.CutSuffix(value, "%"); ok {
		p, err := strconv.Atoi(pct)
		if err != nil || p < 0 || p > 100 {
			return 0, fmt.Errorf("%q is not a percentage from 0%% to 100%%", value)
		}
		return (total*p + 99) / 100, nil
	}
	n, err := strconv.Atoi(value)
	if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(value, "-") {
		// The CRD admits any run of digits; one past what an int holds is more than any pool.
		return math.MaxInt, nil
	}
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is neither a count nor a percentage", value)
	}
	return n, nil
}

func contains(reasons []karpv1.DisruptionReason, r karpv1.DisruptionReason) bool {
	for _, x := range reasons {
		if x == r {
			return true
		}
	}
	return false
}
