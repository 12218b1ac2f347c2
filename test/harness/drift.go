package harness

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"

	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// driftBudget is the time a seed's drift half may take on top of the scale-up and scale-down:
// the fleet is replaced a budget's worth of nodes at a time, each replacement launched and
// initialized before its node is drained.
const driftBudget = 2 * time.Minute

// driftLabel is the template label the drift half changes on every NodePool: a change of the
// template's labels drifts every NodeClaim made from it (NodePoolDrifted).
const driftLabel = "harness.tailor.sh/generation"

// drifts reports whether the seed also drifts its fleet after the scale-down: one seed in four,
// so that drift's evictions are checked as consolidation's are, at a quarter of the time.
func drifts(seed uint64) bool { return seed%4 == 0 }

// driftAll changes every NodePool's template, waits until no NodeClaim made from an old template
// is left (or the time is up, which is not a finding: PodDisruptionBudgets and do-not-disrupt
// pods may hold a drifted node for good), and checks that no pod the drift moved waits.
func driftAll(ctx context.Context, t *testing.T, cluster *sandbox.Cluster, before *Reading, want int) (*Reading, []Finding) {
	t.Helper()
	for _, np := range before.Pools {
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"labels":{%q:"2"}}}}}`, driftLabel)
		if _, err := cluster.Tailor.KarpenterV1().NodePools().Patch(ctx, np.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return nil, []Finding{{"drift", "NodePool/" + np.Name, fmt.Sprintf("patching the template label %s: %v", driftLabel, err)}}
		}
	}
	r, err := settle(ctx, cluster, want, quietDown, true, oldTemplatesLeft)
	if err != nil {
		t.Logf("drift not finished: %v", err)
	}
	if r == nil {
		return nil, nil
	}
	if countOld(r) > 0 {
		pdbs, err := cluster.Kube.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("reading the PodDisruptionBudgets: %v", err)
		} else {
			for _, why := range driftHeld(r, pdbs.Items) {
				t.Logf("drift held: %s", why)
			}
		}
	}
	d, err := ReadDisruptions(ctx, cluster.Kube)
	if err != nil {
		t.Logf("%v", err)
	}
	var out []Finding
	for _, f := range RanThenPending(before, r, d) {
		f.Check += "-after-drift"
		out = append(out, f)
	}
	t.Logf("drift: %d of %d NodeClaims made from the new templates", len(r.Claims)-countOld(r), len(r.Claims))
	return r, out
}

// oldTemplatesLeft says which NodeClaim still runs from a template before the drift, or "".
func oldTemplatesLeft(r *Reading) string {
	for _, c := range r.Claims {
		if c.Labels[driftLabel] == "" && c.DeletionTimestamp == nil {
			return "waiting for drift to replace NodeClaim " + c.Name
		}
	}
	return ""
}

func countOld(r *Reading) int {
	n := 0
	for _, c := range r.Claims {
		if c.Labels[driftLabel] == "" {
			n++
		}
	}
	return n
}

// driftHeld says, for each NodeClaim from an old template that is left, what holds it: a
// PodDisruptionBudget that allows no disruption of a pod on its node (drift, like every voluntary
// disruption, leaves such a node alone; a drain already under way waits on the budget), a pod
// annotated karpenter.sh/do-not-disrupt, or, for a claim being deleted, its Drained condition.
// A claim it has nothing to say about is named as unexplained: that is the drift to look into.
func driftHeld(r *Reading, pdbs []policyv1.PodDisruptionBudget) []string {
	var out []string
	for i := range r.Claims {
		c := &r.Claims[i]
		if c.Labels[driftLabel] != "" {
			continue
		}
		var why []string
		if c.DeletionTimestamp != nil {
			if d := c.GetCondition(karpv1.ConditionTypeDrained); d != nil && d.Status != metav1.ConditionTrue {
				why = append(why, fmt.Sprintf("being deleted, Drained=%s %s: %s", d.Status, d.Reason, d.Message))
			}
		}
		for _, p := range r.podsOn(c.Status.NodeName) {
			if v, ok := p.Annotations[karpv1.DoNotDisruptAnnotationKey]; ok {
				why = append(why, fmt.Sprintf("pod %s is annotated %s=%s", key(p), karpv1.DoNotDisruptAnnotationKey, v))
			}
			for _, pdb := range pdbs {
				sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
				if err != nil || pdb.Namespace != p.Namespace || !sel.Matches(labels.Set(p.Labels)) || pdb.Status.DisruptionsAllowed > 0 {
					continue
				}
				why = append(why, fmt.Sprintf("PodDisruptionBudget %s/%s allows no disruption of pod %s (%d healthy, %d desired)",
					pdb.Namespace, pdb.Name, key(p), pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy))
			}
		}
		if len(why) == 0 {
			why = append(why, "unexplained")
		}
		out = append(out, fmt.Sprintf("NodeClaim %s: %s", c.Name, strings.Join(why, "; ")))
	}
	return out
}
