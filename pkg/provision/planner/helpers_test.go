package planner

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
	"github.com/tailor-sh/tailor/pkg/scheduling"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// One offline simulator (default kube-scheduler profile, fake clientset, no scheduler) serves
// every test and benchmark in the package; they run one at a time, as one planner owns it.
var (
	simOnce sync.Once
	sim     *simulation.Simulator
	simErr  error
)

func testPlanner(tb testing.TB) *Planner {
	tb.Helper()
	simOnce.Do(func() {
		// The simulator's informers live as long as the test binary.
		sim, simErr = simulation.NewOffline(context.Background(), "tailor")
	})
	if simErr != nil {
		tb.Fatalf("building the offline simulator: %v", simErr)
	}
	return NewPlanner(sim)
}

type podOpt func(*corev1.Pod)

func newPod(name, cpu, mem string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{SchedulerName: "tailor", Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func nodeSelector(key, value string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[key] = value
	}
}

func tolerates(key string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
}

func pods(n int, cpu, mem string) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = newPod(fmt.Sprintf("p%03d", i), cpu, mem)
	}
	return out
}

type poolOpt func(*karpv1.NodePool)

// newPool is a NodePool over the whole simulated catalog.
func newPool(name string, opts ...poolOpt) Pool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-pool-" + name)}}
	for _, o := range opts {
		o(np)
	}
	return Pool{NodePool: np, InstanceTypes: fake.Catalog()}
}

func requirement(key string, op corev1.NodeSelectorOperator, values ...string) poolOpt {
	return func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
	}
}

func taint(key string) poolOpt {
	return func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints,
			corev1.Taint{Key: key, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	}
}

func limitCPU(cpu string) poolOpt {
	return func(np *karpv1.NodePool) {
		np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
}

func weighted(w int32) poolOpt {
	return func(np *karpv1.NodePool) { np.Spec.Weight = &w }
}

// sumRequests is what the pods ask for together, with "pods" counting them.
func sumRequests(ps []*corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(len(ps)), resource.DecimalSI)}
	for _, p := range ps {
		out = scheduling.Add(out, scheduling.PodRequests(p))
	}
	return out
}

// holds reports, from the catalog's numbers alone, whether a node of it has room for ps.
func holds(it *cloud.InstanceType, ps []*corev1.Pod) bool {
	return scheduling.Fits(sumRequests(ps), it.Allocatable())
}

// catalogOffering is an (instance type, offering) pair straight from the catalog.
type catalogOffering struct {
	it *cloud.InstanceType
	o  cloud.Offering
}

// offeringsHolding lists the available catalog offerings that have room for ps and satisfy keep,
// with the lowest price among them.
func offeringsHolding(ps []*corev1.Pod, keep func(*cloud.InstanceType, cloud.Offering) bool) ([]catalogOffering, float64) {
	var out []catalogOffering
	cheapest := math.Inf(1)
	for _, it := range fake.Catalog() {
		if !holds(it, ps) {
			continue
		}
		for _, o := range it.Offerings {
			if o.Available && keep(it, o) {
				out = append(out, catalogOffering{it, o})
				cheapest = math.Min(cheapest, o.PricePerHour)
			}
		}
	}
	return out, cheapest
}

// cheapestTypes returns the offerings of the n instance types whose cheapest offering is
// cheapest, as a NodeClaim's list of at most n types keeps them.
func cheapestTypes(offerings []catalogOffering, n int) []catalogOffering {
	sorted := append([]catalogOffering{}, offerings...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].o.PricePerHour != sorted[j].o.PricePerHour {
			return sorted[i].o.PricePerHour < sorted[j].o.PricePerHour
		}
		return sorted[i].it.Name < sorted[j].it.Name
	})
	types := map[string]bool{}
	var out []catalogOffering
	for _, c := range sorted {
		if !types[c.it.Name] && len(types) == n {
			continue
		}
		types[c.it.Name] = true
		out = append(out, c)
	}
	return out
}

func optionKey(it *cloud.InstanceType, o cloud.Offering) string {
	return it.Name + "/" + o.Zone + "/" + o.CapacityType
}

// reasonsOf returns the one Unplaceable entry for pod, failing the test if there is not one.
func reasonsOf(t *testing.T, plan *Plan, pod *corev1.Pod) map[string]string {
	t.Helper()
	for _, u := range plan.Unplaceable {
		if u.Pod.UID == pod.UID {
			return u.Reasons
		}
	}
	t.Fatalf("pod %s is not Unplaceable; plan: %s", pod.Name, summary(plan))
	return nil
}

func summary(plan *Plan) string {
	s := fmt.Sprintf("%d claims [", len(plan.Claims))
	for _, c := range plan.Claims {
		cheapest := ""
		if len(c.Options) > 0 {
			cheapest = c.Options[0].InstanceType.Name
		}
		s += fmt.Sprintf(" %s: %d pods, %d options, cheapest %s;", c.NodePool.Name, len(c.Pods), len(c.Options), cheapest)
	}
	s += fmt.Sprintf(" ], %d fit existing, %d to in-flight claims, %d unplaceable", len(plan.FitsExisting), len(plan.InFlight), len(plan.Unplaceable))
	for _, u := range plan.Unplaceable {
		s += fmt.Sprintf("\n  %s: %v", u.Pod.Name, u.Reasons)
	}
	return s
}

// readyNode is a node that exists and takes pods, with the given allocatable cpu and memory.
func readyNode(name, cpu, mem string) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

// maxCPU is the most cpu the claim may launch with: the capacity of its largest option.
func maxCPU(pc *nodeclaim.Planned) resource.Quantity {
	var out resource.Quantity
	for _, o := range pc.Options {
		if c := o.InstanceType.Capacity[corev1.ResourceCPU]; c.Cmp(out) > 0 {
			out = c
		}
	}
	return out
}
