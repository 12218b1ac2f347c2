package planner

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// Helpers shared by the constraint tests (constraints_*_test.go). Each of those tests plans with
// the real planner over the fake catalog, asserts on the plan, and then checks it against the
// whole Filter of the scheduler profile (verifyPlan), as the scheduler would judge each pod once
// the claims have launched.

// claimNames lists the pods of each claim, names joined with "+", in the order claims opened.
func claimNames(plan *Plan) []string {
	var out []string
	for _, pc := range plan.Claims {
		var names []string
		for _, p := range pc.Pods {
			names = append(names, p.Name)
		}
		out = append(out, strings.Join(names, "+"))
	}
	return out
}

// placedOnce fails the test unless every pod of pending is on exactly one new claim and no pod is
// unplaceable.
func placedOnce(t *testing.T, plan *Plan, pending []*corev1.Pod) {
	t.Helper()
	if len(plan.Unplaceable) != 0 || len(plan.FitsExisting) != 0 {
		t.Fatalf("want every pod on a new claim; got %s", summary(plan))
	}
	seen := map[string]int{}
	for _, pc := range plan.Claims {
		if len(pc.Options) == 0 {
			t.Errorf("claim %v has no options", claimNames(&Plan{Claims: []*nodeclaim.Planned{pc}}))
		}
		for _, p := range pc.Pods {
			seen[p.Name]++
		}
	}
	for _, p := range pending {
		if seen[p.Name] != 1 {
			t.Errorf("pod %s is on %d claims, want 1; %s", p.Name, seen[p.Name], summary(plan))
		}
	}
}

// onlyClaim returns the plan's one claim, failing unless it holds every pending pod.
func onlyClaim(t *testing.T, plan *Plan, pending ...*corev1.Pod) *nodeclaim.Planned {
	t.Helper()
	placedOnce(t, plan, pending)
	if len(plan.Claims) != 1 {
		t.Fatalf("want one claim; got %s", summary(plan))
	}
	return plan.Claims[0]
}

// valuesOf returns the distinct values, sorted, that the claim's options give key on the node.
func valuesOf(pc *nodeclaim.Planned, key string) []string {
	seen := map[string]bool{}
	claim := nodeclaim.New(pc).Labels
	for _, o := range pc.Options {
		seen[nodeLabels(claim, o)[key]] = true
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// nodeLabels are the labels of a node launched as o for a NodeClaim labelled claim: the claim's,
// then the instance type's, zone and capacity type, as the cloud sets them.
func nodeLabels(claim map[string]string, o nodeclaim.Option) map[string]string {
	labels := make(map[string]string, len(claim)+len(o.InstanceType.Labels)+2)
	for k, v := range claim {
		labels[k] = v
	}
	for k, v := range o.InstanceType.Labels {
		labels[k] = v
	}
	labels[corev1.LabelTopologyZone] = o.Offering.Zone
	labels[karpv1.CapacityTypeLabelKey] = o.Offering.CapacityType
	return labels
}

// settledOn returns the one value of key that every option of the claim agrees on, failing the
// test when they disagree: a claim counted in a topology domain must launch in that domain only.
func settledOn(t *testing.T, pc *nodeclaim.Planned, key string) string {
	t.Helper()
	vs := valuesOf(pc, key)
	if len(vs) != 1 {
		t.Fatalf("claim %v may launch with %s in %v; want one domain", pc.Pods[0].Name, key, vs)
	}
	return vs[0]
}

// podsPerDomain counts the pods of the claims per value of key, each claim settled on one value.
func podsPerDomain(t *testing.T, plan *Plan, key string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, pc := range plan.Claims {
		out[settledOn(t, pc, key)] += len(pc.Pods)
	}
	return out
}

// everyOption fails the test for each option of the claim that keep refuses.
func everyOption(t *testing.T, pc *nodeclaim.Planned, what string, keep func(*cloud.InstanceType, cloud.Offering) bool) {
	t.Helper()
	for _, o := range pc.Options {
		if !keep(o.InstanceType, o.Offering) {
			t.Errorf("option %s is not %s", optionKey(o.InstanceType, o.Offering), what)
		}
	}
}

// sameOptions fails the test unless the claim's options are exactly the offerings of the
// catalog's MaxInstanceTypes cheapest types that hold like and satisfy keep: the pods were judged
// by what they really ask for (init containers, overhead, ...), no more, no less. like are pods
// with the same requests in plain containers.
func sameOptions(t *testing.T, pc *nodeclaim.Planned, like []*corev1.Pod, keep func(*cloud.InstanceType, cloud.Offering) bool) {
	t.Helper()
	want, cheapest := offeringsHolding(like, keep)
	if len(want) == 0 {
		t.Fatal("no offering of the catalog holds the pods; fix the case")
	}
	wantKeys := map[string]bool{}
	for _, w := range cheapestTypes(want, nodeclaim.MaxInstanceTypes) {
		wantKeys[optionKey(w.it, w.o)] = true
	}
	got := map[string]bool{}
	for _, o := range pc.Options {
		key := optionKey(o.InstanceType, o.Offering)
		got[key] = true
		if !wantKeys[key] {
			t.Errorf("option %s has no room for the pods, or does not satisfy the case", key)
		}
	}
	missing := 0
	for key := range wantKeys {
		if !got[key] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("the claim leaves out %d of the %d offerings that hold the pods", missing, len(wantKeys))
	}
	if got := pc.Options[0].Offering.PricePerHour; got != cheapest {
		t.Errorf("cheapest option costs %v, the cheapest offering that holds the pods costs %v", got, cheapest)
	}
}

// verifyPlan checks the plan against the whole Filter of s (the simulator the planner used): the
// cluster is in's nodes and pods plus every claim launched as its cheapest option, and each
// claim in turn launched as a sample of its options (the cheapest, the dearest, the first of each
// zone and capacity type, and a spread between). Each pod must pass PreFilter and every Filter
// plugin on its node with every other pod in place, as the scheduler judges the last pod it binds.
// The pods left to nodes in flight are checked there too, on the nodes as the input shows them.
func verifyPlan(t *testing.T, s *simulation.Simulator, in Input, plan *Plan) {
	t.Helper()
	// The pods the plan left on capacity in flight are weighed beside the claims' cheapest
	// options, on the nodes in flight as the input shows them.
	var onInFlight []*corev1.Pod
	for node, claim := range in.InFlight {
		for _, p := range plan.InFlight[claim] {
			onInFlight = append(onInFlight, clusterview.OnNode(p, node))
		}
	}
	claimLabels, catalog := claimLabelsOf(plan), fake.Catalog()
	cluster := func(which, o int) ([]*corev1.Node, []*corev1.Pod) {
		nodes, pods := materialiseWith(plan, which, o, claimLabels)
		nodes = append(append([]*corev1.Node{}, in.Nodes...), nodes...)
		pods = append(append(append([]*corev1.Pod{}, in.Pods...), pods...), onInFlight...)
		for _, p := range plan.FitsExisting {
			pods = append(pods, clusterview.OnNode(p, plan.FitsExistingOn[p.UID]))
		}
		return nodes, pods
	}
	for i, pc := range plan.Claims {
		if len(pc.Options) == 0 {
			t.Errorf("claim %d has no options", i)
			continue
		}
		expressibleOnly(t, pc, catalog)
		for _, o := range sampleOptions(pc) {
			last := newLastOn(cluster(i, o))
			for _, p := range pc.Pods {
				if why := last.why(t, s, p); why != "" {
					opt := pc.Options[o]
					t.Errorf("claim %d launched as %s: pod %s fails the Filter: %s", i, optionKey(opt.InstanceType, opt.Offering), p.Name, why)
					return
				}
			}
		}
	}
	last := newLastOn(cluster(-1, 0))
	for _, p := range onInFlight {
		if why := last.why(t, s, p); why != "" {
			t.Errorf("pod %s fails the Filter on %s, the node in flight it was left to: %s", p.Name, p.Spec.NodeName, why)
		}
	}
}

func sampleOptions(pc *nodeclaim.Planned) []int {
	n := len(pc.Options)
	pick := map[int]bool{0: true, n - 1: true}
	seen := map[string]bool{}
	for i, o := range pc.Options {
		if key := o.Offering.Zone + "/" + o.Offering.CapacityType; !seen[key] {
			seen[key] = true
			pick[i] = true
		}
	}
	for k := 1; k < 8; k++ {
		pick[k*n/8] = true
	}
	out := make([]int, 0, len(pick))
	for i := range pick {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// reasonContains fails the test unless pod is Unplaceable with a reason (for some NodePool, or
// overall) that contains every one of parts.
func reasonContains(t *testing.T, plan *Plan, pod *corev1.Pod, parts ...string) {
	t.Helper()
	reasons := reasonsOf(t, plan, pod)
	for _, why := range reasons {
		if !slices.ContainsFunc(parts, func(part string) bool { return !strings.Contains(why, part) }) {
			return
		}
	}
	t.Errorf("pod %s is unplaceable because %v; want a reason that says %q", pod.Name, reasons, parts)
}

// zonedNode is a ready node in zone with the given allocatable cpu and memory.
func zonedNode(name, zone, cpu, mem string) *corev1.Node {
	n := readyNode(name, cpu, mem)
	n.Labels[corev1.LabelTopologyZone] = zone
	return n
}

// family keeps the offerings of the instance-type families named.
func family(names ...string) func(*cloud.InstanceType, cloud.Offering) bool {
	return func(it *cloud.InstanceType, _ cloud.Offering) bool {
		return slices.Contains(names, strings.SplitN(it.Name, ".", 2)[0])
	}
}

func anyOffering(*cloud.InstanceType, cloud.Offering) bool { return true }

// knownBug skips a case that shows a planner bug or a missing feature, described in reason, unless
// TAILOR_KNOWN_BUGS=1: then it runs, to show the failure or to confirm a fix.
func knownBug(t *testing.T, reason string) {
	t.Helper()
	if reason != "" && os.Getenv("TAILOR_KNOWN_BUGS") != "1" {
		t.Skip(reason)
	}
}

// replicas are n pods named app-i and labelled app=app, each with opts, as a Deployment's.
func replicas(n int, app, cpu, mem string, opts ...podOpt) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = newPod(fmt.Sprintf("%s-%d", app, i), cpu, mem, append([]podOpt{labelled(app)}, opts...)...)
	}
	return out
}

func selecting(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}
