package disruption

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// testNow is the time every test's State is read at.
var testNow = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// One offline simulator (kube-scheduler's default profile over an empty fake clientset) serves
// every test and benchmark of the package; they run one at a time, as one planner owns it.
var (
	simOnce sync.Once
	sim     *simulation.Simulator
	simErr  error
)

// testPlanner is the provisioning planner over the shared simulator: the very planner the
// disruption loop asks in production.
func testPlanner(tb testing.TB) *planner.Planner {
	tb.Helper()
	simOnce.Do(func() {
		// The simulator's informers live as long as the test binary.
		sim, simErr = simulation.NewOffline(context.Background(), "tailor")
	})
	if simErr != nil {
		tb.Fatalf("building the offline simulator: %v", simErr)
	}
	return planner.NewPlanner(sim)
}

// countingPlanner counts the plans, i.e. the simulations, a pass asks for.
type countingPlanner struct {
	Planner
	plans int
}

func (c *countingPlanner) Plan(ctx context.Context, in planner.Input) *planner.Plan {
	c.plans++
	return c.Planner.Plan(ctx, in)
}

type poolOpt func(*karpv1.NodePool)

// newPool is a NodePool as the CRD defaults it with consolidateAfter 0s: consolidation of empty
// and underutilized nodes, the default budget of 10%.
func newPool(name string, opts ...poolOpt) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-pool-" + name)}}
	np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(0)
	np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
	for _, o := range opts {
		o(np)
	}
	return np
}

// budget is a budget of nodes, a count or a percentage, for the reasons given (all if none).
func budget(nodes string, reasons ...karpv1.DisruptionReason) poolOpt {
	return func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = append(np.Spec.Disruption.Budgets, karpv1.Budget{Nodes: nodes, Reasons: reasons})
	}
}

func whenEmpty() poolOpt {
	return func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
	}
}

func consolidateNever() poolOpt {
	return func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NillableDuration{} }
}

func requirement(key string, op corev1.NodeSelectorOperator, values ...string) poolOpt {
	return func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
	}
}

// onDemandOnly keeps a pool's launches, and so its replacements, on demand.
func onDemandOnly() poolOpt {
	return requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)
}

// cluster builds a State: NodePools over the simulated catalog, Tailor's nodes with their
// NodeClaims, pods and PDBs.
type cluster struct {
	tb testing.TB
	*State
	types map[string]*cloud.InstanceType
}

func newCluster(tb testing.TB, pools ...*karpv1.NodePool) *cluster {
	catalog := fake.Catalog()
	c := &cluster{tb: tb, types: map[string]*cloud.InstanceType{}, State: &State{
		Pools:       map[string]*karpv1.NodePool{},
		TypesByPool: map[string][]*cloud.InstanceType{},
		Planned:     map[types.UID]string{},
		Assumed:     map[types.UID]string{},
		Now:         testNow,
	}}
	for _, it := range catalog {
		c.types[it.Name] = it
	}
	for _, np := range pools {
		c.Pools[np.Name] = np
		c.TypesByPool[np.Name] = catalog
	}
	return c
}

// offering is where and how a node was bought.
type offering struct {
	instanceType, zone, capacityType string
}

var (
	odXLarge  = offering{"m6i.xlarge", fake.ZoneA, karpv1.CapacityTypeOnDemand}
	od2XLarge = offering{"m6i.2xlarge", fake.ZoneA, karpv1.CapacityTypeOnDemand}
)

type nodeOpt func(*corev1.Node, *karpv1.NodeClaim)

// node adds a Ready node of pool, bought as o, with its NodeClaim: launched, registered and
// initialized an hour ago, consolidatable for half an hour. Options change either afterwards.
func (c *cluster) node(name, pool string, o offering, opts ...nodeOpt) *corev1.Node {
	c.tb.Helper()
	it, ok := c.types[o.instanceType]
	if !ok {
		// A type the catalog no longer lists: the node runs, but cannot be priced.
		it = &cloud.InstanceType{Name: o.instanceType, Labels: map[string]string{corev1.LabelInstanceTypeStable: o.instanceType},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
				corev1.ResourcePods: resource.MustParse("58")}}
	}
	providerID := fmt.Sprintf("%s:///%s/%s", fake.ProviderName, o.zone, name)
	labels := map[string]string{}
	for k, v := range it.Labels {
		labels[k] = v
	}
	labels[corev1.LabelTopologyZone] = o.zone
	labels[corev1.LabelTopologyRegion] = fake.Region
	labels[karpv1.CapacityTypeLabelKey] = o.capacityType
	labels[karpv1.NodePoolLabelKey] = pool
	claimLabels := map[string]string{}
	for k, v := range labels {
		claimLabels[k] = v
	}
	labels[corev1.LabelHostname] = name

	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-claim-" + name), Labels: claimLabels},
		Status: karpv1.NodeClaimStatus{NodeName: name, ProviderID: providerID,
			Capacity: it.Capacity.DeepCopy(), Allocatable: it.Allocatable()},
	}
	launched := testNow.Add(-time.Hour)
	for _, cond := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
		claim.SetCondition(cond, metav1.ConditionTrue, cond, "", launched)
	}
	claim.SetCondition(karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, "Consolidatable", "", testNow.Add(-30*time.Minute))
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-node-" + name), Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status: corev1.NodeStatus{
			Capacity:    it.Capacity.DeepCopy(),
			Allocatable: it.Allocatable(),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:    corev1.NodeSystemInfo{Architecture: labels[corev1.LabelArchStable], OperatingSystem: labels[corev1.LabelOSStable]},
		},
	}
	for _, opt := range opts {
		opt(n, claim)
	}
	c.Nodes = append(c.Nodes, n)
	c.Claims = append(c.Claims, claim)
	return n
}

func uninitialized() nodeOpt {
	return func(_ *corev1.Node, claim *karpv1.NodeClaim) {
		claim.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionFalse, "NotInitialized", "", testNow)
	}
}

func notConsolidatable() nodeOpt {
	return func(_ *corev1.Node, claim *karpv1.NodeClaim) {
		claim.SetCondition(karpv1.ConditionTypeConsolidatable, metav1.ConditionFalse, "PodsChangedRecently", "", testNow)
	}
}

// drifted marks the claim Drifted since the given time.
func drifted(since time.Time) nodeOpt {
	return func(_ *corev1.Node, claim *karpv1.NodeClaim) {
		claim.SetCondition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, "NodePoolDrifted", "", since)
	}
}

func nodeAnnotated(key, value string) nodeOpt {
	return func(n *corev1.Node, _ *karpv1.NodeClaim) { metav1.SetMetaDataAnnotation(&n.ObjectMeta, key, value) }
}

func nodeTainted(t corev1.Taint) nodeOpt {
	return func(n *corev1.Node, _ *karpv1.NodeClaim) { n.Spec.Taints = append(n.Spec.Taints, t) }
}

func claimDeleting() nodeOpt {
	return func(_ *corev1.Node, claim *karpv1.NodeClaim) {
		claim.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
		claim.Finalizers = []string{karpv1.TerminationFinalizer}
	}
}

type podOpt func(*corev1.Pod)

// pod adds a running pod bound to node (unbound when node is ""), started an hour ago.
func (c *cluster) pod(name, node, cpu, mem string, opts ...podOpt) *corev1.Pod {
	started := metav1.NewTime(testNow.Add(-time.Hour))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: started,
			Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{SchedulerName: "tailor", NodeName: node, Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if node != "" {
		p.Status.Phase = corev1.PodRunning
		p.Status.StartTime = &started
	}
	for _, o := range opts {
		o(p)
	}
	c.Pods = append(c.Pods, p)
	return p
}

func podAnnotated(key, value string) podOpt {
	return func(p *corev1.Pod) { metav1.SetMetaDataAnnotation(&p.ObjectMeta, key, value) }
}

func doNotDisruptPod(value string) podOpt {
	return podAnnotated(karpv1.DoNotDisruptAnnotationKey, value)
}

// startedAgo sets when the pod was created and started.
func startedAgo(d time.Duration) podOpt {
	return func(p *corev1.Pod) {
		t := metav1.NewTime(testNow.Add(-d))
		p.CreationTimestamp = t
		p.Status.StartTime = &t
	}
}

// notStarted leaves the pod created d ago but without a start time.
func notStarted(createdAgo time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.CreationTimestamp = metav1.NewTime(testNow.Add(-createdAgo))
		p.Status.StartTime = nil
	}
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func podLabeled(key, value string) podOpt {
	return func(p *corev1.Pod) { p.Labels[key] = value }
}

func inNamespace(ns string) podOpt { return func(p *corev1.Pod) { p.Namespace = ns } }

// inGroup makes the pod one of the PodGroup group (spec.schedulingGroup).
func inGroup(group string) podOpt {
	return func(p *corev1.Pod) { p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group} }
}

func ownedByDaemonSet() podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet",
			Name: "ds", UID: "uid-ds", Controller: ptr.To(true)})
	}
}

func nominatedTo(node string) podOpt {
	return func(p *corev1.Pod) { p.Status.NominatedNodeName = node }
}

func toleratesDisrupted() podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists})
	}
}

// pinnedTo selects the node by hostname: the pod can run nowhere else.
func pinnedTo(node string) podOpt {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node} }
}

// pdb adds a PodDisruptionBudget that allows the given number of disruptions now, over the pods
// of its namespace that sel selects.
func (c *cluster) pdb(name, namespace string, allowed int32, sel *metav1.LabelSelector) {
	c.PDBs = append(c.PDBs, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: sel, MinAvailable: ptr.To(intstr.FromInt32(1))},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	})
}

func selector(key, value string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
}

// candidate returns the named candidate, failing the test if it is not one.
func candidate(tb testing.TB, s *State, name string) *Candidate {
	tb.Helper()
	cands, blocked := Candidates(s, nil)
	for _, c := range cands {
		if c.Node.Name == name {
			return c
		}
	}
	tb.Fatalf("node %s is not a candidate: %q", name, blocked[name])
	return nil
}

// decideOpts never runs out of time: tests do not depend on the clock.
func decideOpts(spotMin int) DecideOptions {
	return DecideOptions{SpotToSpotMin: spotMin, Deadline: testNow.Add(time.Hour), Now: func() time.Time { return testNow }}
}

// describe is a command for failure messages.
func describe(cmd *Command) string {
	if cmd == nil {
		return "no command"
	}
	s := fmt.Sprintf("%s by %s of %v (%s)", cmd.Decision(), cmd.Method, cmd.Nodes(), cmd.String())
	for _, r := range cmd.Replacements {
		s += fmt.Sprintf("; replacement with %d pods, %d options from %s at $%.4f/h", len(r.Pods), len(r.Options),
			r.Options[0].InstanceType.Name, r.Options[0].Offering.PricePerHour)
	}
	return s
}
