package planner

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
)

// launchingIn is a NodeClaim of the default pool in flight in zone, not yet registered.
func launchingIn(name, zone string) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}},
		}},
	}
}

// TestPodsHeadedWhereTheirAffinityNoLongerHoldsArePlannedAgain: harness seed 2404. A Job's pods
// must share a zone (required pod affinity) and spread over zones with maxSkew 1: only one can
// run. A plan sent job-1 to a claim launching in zone c by the first-pod rule; the scheduler then
// bound job-0 to a node running in zone a by the same rule. Counted on its claim, job-1 made the
// next plan see a pod of the Job in each zone, and it opened claims in both zones for the rest,
// which the scheduler refused. The plan must see job-1 as the pending pod it is, and place none.
func TestPodsHeadedWhereTheirAffinityNoLongerHoldsArePlannedAgain(t *testing.T) {
	const app = "job"
	zone := corev1.LabelTopologyZone
	job := func(i int) *corev1.Pod {
		return newPod(fmt.Sprintf("job-%d", i), "1", "1Gi", labelled(app),
			with([]corev1.PodAffinityTerm{podTerm(app, zone)}, nil), spread(app, zone, 1, corev1.DoNotSchedule))
	}
	runningA := zonedNode("running-a", fake.ZoneA, "2", "8Gi")
	claim := launchingIn("claim-c", fake.ZoneC)
	pool := newPool("default")
	typesByPool := map[string][]*cloud.InstanceType{"default": pool.InstanceTypes}
	headed := job(1)
	var pending []*corev1.Pod
	for i := 2; i <= 5; i++ {
		pending = append(pending, job(i))
	}
	for _, tc := range []struct {
		name string
		// bound: job-0 runs in zone a.
		bound bool
		// counted: whether job-1 stays counted on its claim; placed: how many of job-2..5 the
		// plan places.
		counted bool
		placed  int
	}{
		// Nothing of the Job runs: job-1 goes to its claim by the first-pod rule, and the spread
		// (zone a has a node and no pod of the Job) leaves room for no other.
		{name: "nothing of the job runs", counted: true, placed: 0},
		{name: "another pod of the job runs elsewhere", bound: true, counted: false, placed: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := []*corev1.Pod{headed}
			if tc.bound {
				pods = append(pods, clusterview.OnNode(job(0), runningA.Name))
			}
			c := &clusterview.Cluster{Nodes: []*corev1.Node{runningA}, Pods: pods, Claims: []*karpv1.NodeClaim{claim},
				Planned: map[types.UID]string{headed.UID: claim.Name}}
			v := c.View(typesByPool)
			if v.Headed[headed.UID] == "" {
				t.Fatalf("view: headed %v; want job-1 headed for its claim", v.Headed)
			}
			pl := testPlanner(t)
			v.Uncount(pl.Ungrounded(context.Background(), v))
			if v.Counted[headed.UID] != tc.counted {
				t.Fatalf("job-1 counted on its claim: %v, want %v", v.Counted[headed.UID], tc.counted)
			}
			onClaim := slices.ContainsFunc(v.Pods, func(p *corev1.Pod) bool { return p.UID == headed.UID })
			if onClaim != tc.counted {
				t.Fatalf("job-1 in the view's pods: %v, want %v", onClaim, tc.counted)
			}
			in := Input{Pending: slices.Clone(pending), Nodes: v.Nodes, Pods: v.Pods, InFlight: v.InFlight, Pools: []Pool{pool}}
			if !tc.counted {
				in.Pending = append(in.Pending, headed)
			}
			plan := pl.Plan(context.Background(), in)
			placed := len(in.Pending) - len(plan.Unplaceable)
			if placed != tc.placed {
				t.Errorf("%d of the Job's pending pods placed, want %d: %s", placed, tc.placed, summary(plan))
			}
		})
	}
}

// TestHeadedPodsLeanOnEachOther: two pods that must share a zone, both headed for one claim and
// nothing of theirs running: the first stands by the first-pod rule and the second beside it.
// Neither is planned again. A pod whose affinity names another app leans on that app's pod
// headed the same way, which has no affinity of its own to doubt.
func TestHeadedPodsLeanOnEachOther(t *testing.T) {
	zone := corev1.LabelTopologyZone
	claim := launchingIn("claim-c", fake.ZoneC)
	pool := newPool("default")
	self := func(name string) *corev1.Pod {
		return newPod(name, "500m", "512Mi", labelled("pair"), with([]corev1.PodAffinityTerm{podTerm("pair", zone)}, nil))
	}
	db := newPod("db", "500m", "512Mi", labelled("db"))
	web := newPod("web", "500m", "512Mi", labelled("web"), with([]corev1.PodAffinityTerm{podTerm("db", zone)}, nil))
	headed := []*corev1.Pod{self("pair-1"), self("pair-2"), db, web}
	planned := map[types.UID]string{}
	for _, p := range headed {
		planned[p.UID] = claim.Name
	}
	c := &clusterview.Cluster{Pods: headed, Claims: []*karpv1.NodeClaim{claim}, Planned: planned}
	v := c.View(map[string][]*cloud.InstanceType{"default": pool.InstanceTypes})
	if loose := testPlanner(t).Ungrounded(context.Background(), v); len(loose) != 0 {
		t.Errorf("planned again %v; want every headed pod left counted", loose)
	}
}
