package planner

import (
	"context"
	"math"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
)

// TestTheClaimThatGrowsForLeastTakesThePod: two pods that repel each other open a claim each,
// and a third pod fits the room of neither. Growing the first claim for it costs two sizes of
// Karpenter's catalog, growing the second one size: the pod joins the second. (First fit grew
// the first, to 1.8 an hour in all against 1.5.)
func TestTheClaimThatGrowsForLeastTakesThePod(t *testing.T) {
	cpuHeavy := classPod(classHostAnti, newPod("apart-cpu", "2", "512Mi"))
	memHeavy := classPod(classHostAnti, newPod("apart-mem", "1", "3584Mi"))
	for _, p := range []*corev1.Pod{cpuHeavy, memHeavy} {
		p.Labels = map[string]string{benchClassLabel: classHostAnti}
	}
	joiner := newPod("joiner", "2", "256Mi")
	pl := testPlanner(t)
	pool := newPool("default")
	pool.InstanceTypes = karpenterCatalog()
	plan := pl.Plan(context.Background(), Input{Pending: []*corev1.Pod{joiner, cpuHeavy, memHeavy}, Pools: []Pool{pool}})
	if len(plan.Unplaceable) > 0 || len(plan.Claims) != 2 {
		t.Fatalf("want the three pods on two claims, got %s", summary(plan))
	}
	var price float64
	for _, c := range plan.Claims {
		price += c.Options[0].Offering.PricePerHour
		if hasPod(c, joiner) != hasPod(c, memHeavy) {
			t.Errorf("claim %s (%s) holds %v; want the joiner beside %s, whose claim grows one size for it",
				c.Options[0].InstanceType.Name, c.NodePool.Name, podNames(c.Pods), memHeavy.Name)
		}
	}
	if math.Abs(price-1.5) > 1e-9 {
		t.Errorf("the plan costs %.2f an hour, want 1.50 (sizes 2 and 3)", price)
	}
}

// TestGrowthsOfOnePriceAreEqual: in Karpenter's catalog (0.3·n an hour) every one-size step costs
// 0.3, but not in float64 (4→5 came out below 1→2), and the order must not turn on that.
func TestGrowthsOfOnePriceAreEqual(t *testing.T) {
	catalog := karpenterCatalog()
	step := func(from int) int64 {
		return micros(catalog[from].Offerings[0].PricePerHour) - micros(catalog[from-1].Offerings[0].PricePerHour)
	}
	for from := 2; from < 10; from++ {
		if step(from) != step(1) {
			t.Errorf("growing from size %d costs %d micro-dollars an hour, from size 1 %d", from, step(from), step(1))
		}
	}
}

// TestAHigherPoolsClaimGrowsFirst: a pod that fits no claim's room grows a claim of the NodePool
// weighted first before one of a pool weighted lower, though the latter grows for less, as a
// new claim would come from the first pool.
func TestAHigherPoolsClaimGrowsFirst(t *testing.T) {
	first, second := newPool("first"), newPool("second")
	first.InstanceTypes, second.InstanceTypes = karpenterCatalog(), karpenterCatalog()
	onFirst := newPod("on-first", "2", "512Mi")
	onSecond := newPod("on-second", "1", "3584Mi", nodeSelector(karpv1.NodePoolLabelKey, "second"))
	joiner := newPod("joiner", "2", "256Mi")
	plan := testPlanner(t).Plan(context.Background(), Input{Pending: []*corev1.Pod{joiner, onFirst, onSecond}, Pools: []Pool{first, second}})
	if len(plan.Unplaceable) > 0 || len(plan.Claims) != 2 {
		t.Fatalf("want the three pods on two claims, got %s", summary(plan))
	}
	for _, c := range plan.Claims {
		if hasPod(c, joiner) != (c.NodePool.Name == "first") {
			t.Errorf("claim of %s holds %v; want the joiner on the first pool's claim", c.NodePool.Name, podNames(c.Pods))
		}
	}
}

// TestAClaimsOwnPodsStillDecide: once a claim refuses a pod, the claims of the same domain are
// not asked again for it (byDomain), but not when what refused it was the claim's own pods. Two
// claims in one zone each hold a replica that keeps the other away; the first holds host port
// 8080 too. A pod asking for port 8080 is refused there and fits the second; skipped with the
// first, it would open a claim of its own.
func TestAClaimsOwnPodsStillDecide(t *testing.T) {
	hostPort := func(port int32) podOpt {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port})
		}
	}
	first := classPod(classHostAnti, newPod("apart-1", "500m", "1Gi", hostPort(8080)))
	second := classPod(classHostAnti, newPod("apart-2", "500m", "1Gi", hostPort(9090)))
	for _, p := range []*corev1.Pod{first, second} {
		p.Labels = map[string]string{benchClassLabel: classHostAnti}
	}
	joiner := newPod("joiner", "250m", "512Mi", hostPort(8080))
	pool := newPool("default", requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2a"))
	pool.InstanceTypes = karpenterCatalog()
	plan := testPlanner(t).Plan(context.Background(), Input{Pending: []*corev1.Pod{joiner, first, second}, Pools: []Pool{pool}})
	if len(plan.Unplaceable) > 0 || len(plan.Claims) != 2 {
		t.Fatalf("want the three pods on two claims, got %s", summary(plan))
	}
	for _, c := range plan.Claims {
		if hasPod(c, joiner) != hasPod(c, second) {
			t.Errorf("claim %s holds %v; want the joiner beside %s, whose host port is another", c.Options[0].InstanceType.Name, podNames(c.Pods), second.Name)
		}
	}
}

// TestWhoIsAnsweredByDomain lists the pods whose refusal by one claim may stand for its domain's
// other claims, and those that are asked on every claim.
func TestWhoIsAnsweredByDomain(t *testing.T) {
	byName := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight: 1, Preference: corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}},
	}}}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"plain", newPod("plain", "1", "1Gi"), true},
		{"zone spread", classPod(classZoneSpread, newPod("zs", "1", "1Gi")), true},
		{"zone affinity", classPod(classZoneAffinity, newPod("za", "1", "1Gi")), true},
		{"hostname spread", classPod(classHostSpread, newPod("hs", "1", "1Gi")), false},
		{"hostname anti-affinity", classPod(classHostAnti, newPod("ha", "1", "1Gi")), false},
		{"host port", newPod("hp", "1", "1Gi", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
		}), false},
		{"node name", newPod("nn", "1", "1Gi", func(p *corev1.Pod) { p.Spec.NodeName = "n1" }), false},
		{"node affinity by name", newPod("na", "1", "1Gi", func(p *corev1.Pod) { p.Spec.Affinity = byName }), false},
		{"config volume", newPod("cv", "1", "1Gi", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
		}), true},
		{"inline EBS volume", newPod("ev", "1", "1Gi", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "e", VolumeSource: corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}}}
		}), false},
		{"extended resource", newPod("gpu", "1", "1Gi", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
		}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := podkeys.New(nil, nil, []*corev1.Pod{tc.pod})
			if got := byDomainOf(tc.pod, rel.Keys(tc.pod)).ok; got != tc.want {
				t.Errorf("answered by domain: %v, want %v", got, tc.want)
			}
		})
	}
}

func hasPod(c *nodeclaim.Planned, pod *corev1.Pod) bool { return slices.Contains(c.Pods, pod) }

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
