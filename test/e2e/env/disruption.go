package env

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// ConsolidatingPool is a NodePool over the fake catalog that consolidates at once, with budgets.
func ConsolidatingPool(name string, budgets ...karpv1.Budget) *karpv1.NodePool {
	np := NodePool(name)
	np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(0)
	np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
	np.Spec.Disruption.Budgets = budgets
	return np
}

// Sampler checks an invariant every few milliseconds in the background until stopped, and keeps
// the first violation it saw.
type Sampler struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples int
	failure string
}

// Sample runs check every interval until the Sampler is stopped; check says what is wrong, or "".
func (e *Env) Sample(every time.Duration, check func() string) *Sampler {
	s := &Sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-e.Ctx.Done():
				return
			case <-t.C:
			}
			why := check()
			s.mu.Lock()
			s.samples++
			if why != "" && s.failure == "" {
				s.failure = why
			}
			s.mu.Unlock()
		}
	}()
	return s
}

// Stop ends the sampling and fails the test if the invariant ever broke.
func (s *Sampler) Stop(e *Env, what string) {
	e.T.Helper()
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure != "" {
		e.T.Fatalf("%s broke: %s", what, s.failure)
	}
	e.T.Logf("%s held over %d samples", what, s.samples)
}

// Disrupting counts the pool's nodes that are being disrupted: tainted karpenter.sh/disrupted or
// whose NodeClaim is being deleted.
func (e *Env) Disrupting(pool string) (int, string) {
	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey + "=" + pool})
	if err != nil {
		return 0, ""
	}
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return 0, ""
	}
	deleting := map[string]bool{}
	for _, c := range claims.Items {
		if c.DeletionTimestamp != nil && c.Status.ProviderID != "" {
			deleting[c.Status.ProviderID] = true
		}
	}
	n, names := 0, ""
	for _, node := range nodes.Items {
		if nodetaint.IsDisrupted(&node) || deleting[node.Spec.ProviderID] || node.DeletionTimestamp != nil {
			n++
			names += " " + node.Name
		}
	}
	return n, names
}

// ReadyPods counts the pods with the selector that are Running, Ready and not being deleted.
func (e *Env) ReadyPods(selector string) int {
	list, err := e.Cluster.Kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return -1
	}
	n := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// poolTypes reads the NodePool and the instance types the cloud offers it.
func (e *Env) poolTypes(pool string) (*karpv1.NodePool, []*cloud.InstanceType) {
	e.T.Helper()
	np, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, pool, metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	its, err := e.Cloud.InstanceTypes(e.Ctx, np)
	if err != nil {
		e.T.Fatal(err)
	}
	return np, its
}

// FleetPrice is the hourly price of the pool's nodes, from the cloud's catalog, and how many
// there are.
func (e *Env) FleetPrice(pool string) (float64, int) {
	e.T.Helper()
	_, its := e.poolTypes(pool)
	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey + "=" + pool})
	if err != nil {
		e.T.Fatal(err)
	}
	total, count := 0.0, 0
	for _, n := range nodes.Items {
		for _, it := range its {
			if it.Name != n.Labels[corev1.LabelInstanceTypeStable] {
				continue
			}
			for _, o := range it.Offerings {
				if o.Zone == n.Labels[corev1.LabelTopologyZone] && o.CapacityType == n.Labels[karpv1.CapacityTypeLabelKey] {
					total += o.PricePerHour
				}
			}
		}
		count++
	}
	return total, count
}

// ScratchPrice is what the planner would launch for the pods of the selector if there were no
// nodes at all: the cheapest packing it knows.
func (e *Env) ScratchPrice(pool, selector string) float64 {
	e.T.Helper()
	np, its := e.poolTypes(pool)
	list, err := e.Cluster.Kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.T.Fatal(err)
	}
	var pending []*corev1.Pod
	for i := range list.Items {
		p := list.Items[i].DeepCopy()
		p.Spec.NodeName = ""
		pending = append(pending, p)
	}
	sim, err := simulation.NewOffline(e.Ctx, "tailor")
	if err != nil {
		e.T.Fatal(err)
	}
	plan := planner.NewPlanner(sim).Plan(e.Ctx, planner.Input{Pending: pending, Pools: []planner.Pool{{NodePool: np, InstanceTypes: its}}})
	if len(plan.Unplaceable) > 0 {
		e.T.Fatalf("the planner cannot place %d pods from scratch", len(plan.Unplaceable))
	}
	total := 0.0
	for _, c := range plan.Claims {
		total += c.Options[0].Offering.PricePerHour
	}
	return total
}

// PinnedPod is a bare pod that may only run on node.
func PinnedPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "pinned"}},
		Spec: func() corev1.PodSpec {
			s := PodSpec("10m", "16Mi")
			s.NodeSelector = map[string]string{corev1.LabelHostname: node}
			s.TerminationGracePeriodSeconds = ptr.To[int64](0)
			return s
		}(),
	}
}

// DescribeNodes describes the pool's nodes for a failure message.
func DescribeNodes(e *Env, pool string) string {
	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey + "=" + pool})
	if err != nil {
		return err.Error()
	}
	out := ""
	for _, n := range nodes.Items {
		out += fmt.Sprintf(" %s(%s)", n.Name, n.Labels[corev1.LabelInstanceTypeStable])
	}
	return out
}
