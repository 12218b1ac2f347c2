// Package disruption is Tailor's voluntary disruption loop: it removes empty nodes, replaces
// drifted ones, and consolidates underutilized ones onto fewer or cheaper nodes, within the
// NodePools' budgets, PodDisruptionBudgets and do-not-disrupt annotations. Every "can these pods
// go elsewhere?" is asked of the provisioning planner, which asks the scheduler profile's Filter
// plugins; nothing here decides fit by itself.
package disruption

import (
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
// now, when the pool has total nodes: the least of its active budgets that apply to the reason.
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
		active, err := isActive(b, now)
		if err != nil {
			return 0, fmt.Errorf("NodePool %s: spec.disruption.budgets[%d]: %w", pool.Name, i, err)
		}
		if !active {
			continue
		}
		n, err := nodes(b.Nodes, total)
		if err != nil {
			return 0, fmt.Errorf("NodePool %s: spec.disruption.budgets[%d].nodes: %w", pool.Name, i, err)
		}
		allowed = min(allowed, n)
	}
	if allowed == math.MaxInt {
		// No budget is active for this reason: nothing limits it but the pool's size.
		return total, nil
	}
	return allowed, nil
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
