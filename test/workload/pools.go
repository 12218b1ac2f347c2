package workload

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// PoolTaintKey is the key of the NoSchedule taint a generated pool may carry (value: the pool's
// name); workloads that tolerate it name the pool in their toleration.
const PoolTaintKey = "harness.tailor.sh/dedicated"

// StartupTaintKey is the startup taint a generated pool may carry; the sandbox's agent clears it
// once the node is Ready.
const StartupTaintKey = "harness.tailor.sh/agent-not-ready"

// TeamLabel is a template label some pools carry and some workloads select.
const TeamLabel = "harness.tailor.sh/team"

// poolTraits is what the workload generator needs to know about the pools to aim some workloads
// at them on purpose (and leave others to land anywhere).
type poolTraits struct {
	name    string
	team    string
	tainted bool
	gpu     bool
}

// nodeClasses returns one EC2NodeClass, "default", or two, the second on another AMI family.
// Both select the emulated account's tagged subnets and security groups and its node role.
func nodeClasses(r *rand.Rand) []*awsv1.EC2NodeClass {
	names := []string{"default"}
	if r.IntN(3) == 0 {
		names = append(names, "bottlerocket")
	}
	var out []*awsv1.EC2NodeClass
	for _, name := range names {
		alias := "al2023@latest"
		if name == "bottlerocket" {
			alias = "bottlerocket@latest"
		}
		nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: alias}}
		nc.Spec.Role = "KarpenterNodeRole-tailor"
		nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "tailor"}}}
		nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "tailor"}}}
		out = append(out, nc)
	}
	return out
}

// nodePools returns 1-4 pools over the classes. When gpu is set the first pool allows g5, so
// that GPU workloads have somewhere to go (other pools may allow it too, or not).
func nodePools(r *rand.Rand, classes []*awsv1.EC2NodeClass, gpu bool) ([]*karpv1.NodePool, []poolTraits) {
	n := 1 + r.IntN(4)
	var pools []*karpv1.NodePool
	var traits []poolTraits
	for i := range n {
		name := fmt.Sprintf("pool-%d", i)
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		t := poolTraits{name: name, gpu: gpu && i == 0}
		spec := &np.Spec.Template.Spec
		spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: classes[r.IntN(len(classes))].Name}
		spec.Requirements = requirements(r, t.gpu)
		np.Spec.Template.Labels = map[string]string{"harness.tailor.sh/pool": name}
		if r.IntN(2) == 0 {
			t.team = []string{"blue", "green"}[r.IntN(2)]
			np.Spec.Template.Labels[TeamLabel] = t.team
		}
		// The first pool is never tainted, so most workloads have an untainted place to go.
		if i > 0 && r.IntN(3) == 0 {
			t.tainted = true
			spec.Taints = []corev1.Taint{{Key: PoolTaintKey, Value: name, Effect: corev1.TaintEffectNoSchedule}}
		}
		if r.IntN(4) == 0 {
			spec.StartupTaints = []corev1.Taint{{Key: StartupTaintKey, Effect: corev1.TaintEffectNoSchedule}}
		}
		if r.IntN(2) == 0 {
			np.Spec.Weight = ptr.To(int32(1 + r.IntN(100)))
		}
		if r.IntN(4) == 0 {
			np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse(strconv.Itoa(16 * (1 + r.IntN(6))))}
		}
		np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
		// Short, so that the scale-down half sees consolidation within seconds.
		np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(time.Second)
		if r.IntN(2) == 0 {
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: []string{"1", "2", "50%", "100%"}[r.IntN(4)]}}
		}
		pools = append(pools, np)
		traits = append(traits, t)
	}
	return pools, traits
}

// requirements draws a pool's requirements over the catalog's label keys. Each key is left out
// often, so that pools range from "anything" to narrow.
func requirements(r *rand.Rand, gpu bool) []karpv1.NodeSelectorRequirementWithMinValues {
	req := func(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
		return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
	}
	out := []karpv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux")}
	switch {
	case gpu:
		out = append(out, req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))
	case r.IntN(2) == 0:
		out = append(out, req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, pick(r, []string{"amd64", "arm64"}, 1)...))
	}
	capacity := pick(r, []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot}, 1)
	out = append(out, req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacity...))
	switch r.IntN(3) {
	case 0: // categories, sometimes with minValues
		cats := pick(r, []string{"c", "m", "r"}, 1)
		if gpu {
			cats = append(cats, "g")
		} else if r.IntN(4) == 0 {
			cats = append(cats, "t")
		}
		c := req(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, cats...)
		if len(cats) >= 2 && r.IntN(2) == 0 {
			c.MinValues = ptr.To(2)
		}
		out = append(out, c)
	case 1: // families
		fams := pick(r, []string{"c5", "c6i", "c6g", "c7i", "c7g", "m5", "m6i", "m6g", "m7i", "m7g", "r5", "r6i", "r6g", "r7i", "r7g", "t3", "t4g"}, 2)
		if gpu {
			fams = append(fams, "g5")
		}
		f := req(awsv1.LabelInstanceFamily, corev1.NodeSelectorOpIn, fams...)
		if len(fams) >= 3 && r.IntN(3) == 0 {
			f.MinValues = ptr.To(2)
		}
		out = append(out, f)
	default: // any category; sometimes no GPUs when none are wanted
		if !gpu && r.IntN(2) == 0 {
			out = append(out, req(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpNotIn, "g"))
		}
	}
	if r.IntN(3) == 0 {
		out = append(out, req(awsv1.LabelInstanceGeneration, corev1.NodeSelectorOpGt, strconv.Itoa(4+r.IntN(2))))
	}
	switch r.IntN(4) {
	case 0:
		out = append(out, req(awsv1.LabelInstanceSize, corev1.NodeSelectorOpNotIn, "large"))
	case 1:
		out = append(out, req(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpLt, strconv.Itoa([]int{17, 33, 65}[r.IntN(3)])))
	}
	if r.IntN(3) == 0 {
		out = append(out, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, pick(r, fake.Zones(), 2)...))
	}
	return out
}

// pick returns a non-empty random subset of from, at least atLeast long, in from's order.
func pick(r *rand.Rand, from []string, atLeast int) []string {
	for {
		var out []string
		for _, v := range from {
			if r.IntN(2) == 0 {
				out = append(out, v)
			}
		}
		if len(out) >= atLeast {
			return out
		}
	}
}
