package harness

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	daemonutil "k8s.io/kubernetes/pkg/controller/daemon/util"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/scheduling"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// Fitter asks kube-scheduler's own Filter plugins (pkg/simulation, the default profile) whether
// a pod fits an existing node or a node some NodePool could launch. It builds its template nodes
// itself, from the cloud's catalog and the pools' requirements, labels, taints and limits, so that
// it shares no code with the planner it is checking.
type Fitter struct {
	sim *simulation.Simulator
	// offerings are every node each pool may launch right now, DaemonSet pods included.
	offerings []offering
}

type offering struct {
	pool    *karpv1.NodePool
	it      *cloud.InstanceType
	node    *corev1.Node
	daemons []*corev1.Pod
}

func (o offering) String() string {
	return fmt.Sprintf("%s %s %s/%s", o.pool.Name, o.it.Name, o.node.Labels[corev1.LabelTopologyZone], o.node.Labels[karpv1.CapacityTypeLabelKey])
}

// NewFitter lists the offerings of every pool of r on cp.
func NewFitter(ctx context.Context, cp cloud.CloudProvider, r *Reading) (*Fitter, error) {
	sim, err := simulation.NewOffline(ctx, "tailor", r.Storage...)
	if err != nil {
		return nil, err
	}
	f := &Fitter{sim: sim}
	used := usedByPool(r.Claims)
	for i := range r.Pools {
		pool := &r.Pools[i]
		sel, err := scheduling.NewSelector(scheduling.NodeSelectorRequirements(pool.Spec.Template.Spec.Requirements))
		if err != nil {
			return nil, fmt.Errorf("NodePool %s: %w", pool.Name, err)
		}
		its, err := cp.InstanceTypes(ctx, pool)
		if err != nil {
			return nil, fmt.Errorf("instance types of NodePool %s: %w", pool.Name, err)
		}
		for _, it := range its {
			if !withinLimits(pool, used[pool.Name], it) {
				continue
			}
			for _, o := range it.Offerings {
				if !o.Available {
					continue
				}
				node := templateNode(pool, it, o)
				if !sel.Matches(node.Labels) || !keepsTemplateLabels(pool, node) {
					continue
				}
				f.offerings = append(f.offerings, offering{pool: pool, it: it, node: node, daemons: f.daemonsOn(ctx, node, r.DaemonSets)})
			}
		}
	}
	return f, nil
}

// keepsTemplateLabels reports whether the node keeps every template label of the pool: template
// labels are requirements (as in Karpenter), so an offering whose type or zone says otherwise
// (a pool labelled with one zone, an offering in another) is not one the pool launches.
func keepsTemplateLabels(pool *karpv1.NodePool, node *corev1.Node) bool {
	for k, v := range pool.Spec.Template.Labels {
		if node.Labels[k] != v {
			return false
		}
	}
	return true
}

// templateNode is the node an offering registers as: the pool's labels, the type's, zone,
// capacity type and pool; the pool's taints (startup taints are cleared by their agent, so pods
// need not tolerate them); the type's allocatable.
func templateNode(pool *karpv1.NodePool, it *cloud.InstanceType, o cloud.Offering) *corev1.Node {
	name := "template-" + it.Name + "-" + o.Zone + "-" + o.CapacityType
	labels := map[string]string{}
	for k, v := range pool.Spec.Template.Labels {
		labels[k] = v
	}
	for k, v := range it.Labels {
		labels[k] = v
	}
	labels[corev1.LabelTopologyZone] = o.Zone
	labels[karpv1.CapacityTypeLabelKey] = o.CapacityType
	labels[karpv1.NodePoolLabelKey] = pool.Name
	labels[corev1.LabelHostname] = name
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: pool.Spec.Template.Spec.Taints},
		Status:     corev1.NodeStatus{Capacity: it.Capacity, Allocatable: it.Allocatable()},
	}
}

// daemonsOn returns a pod of each DaemonSet whose pods the Filter plugins place on node, room
// aside (the DaemonSet controller does not weigh room), with the tolerations its controller adds.
func (f *Fitter) daemonsOn(ctx context.Context, node *corev1.Node, dss []appsv1.DaemonSet) []*corev1.Pod {
	var out []*corev1.Pod
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	f.sim.Use(schedcache.NewSnapshot(nil, []*corev1.Node{node}))
	for _, ds := range dss {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + node.Name, Namespace: ds.Namespace, UID: "ds-" + ds.UID, Labels: ds.Spec.Template.Labels},
			Spec: *ds.Spec.Template.Spec.DeepCopy()}
		daemonutil.AddOrUpdateDaemonPodTolerations(&p.Spec)
		p.Spec.NodeName = node.Name
		state, _, st := f.sim.PreFilter(ctx, p)
		if st == nil && f.sim.FilterPlacement(ctx, state, p, ni).IsSuccess() {
			out = append(out, p)
		}
	}
	return out
}

// FitsExisting returns the first existing node (Ready, not being deleted) the Filter plugins
// accept pod on, given the pods bound now, or "".
func (f *Fitter) FitsExisting(ctx context.Context, r *Reading, pod *corev1.Pod) string {
	f.sim.Use(schedcache.NewSnapshot(r.podsOnLiveNodes(), r.liveNodes()))
	state, _, st := f.sim.PreFilter(ctx, pod)
	if st != nil {
		return ""
	}
	for _, n := range r.liveNodes() {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		for _, p := range r.podsOn(n.Name) {
			ni.AddPod(p)
		}
		if f.sim.Filter(ctx, state, pod, ni).IsSuccess() {
			return n.Name
		}
	}
	return ""
}

// FitsNew returns the offerings a pool could launch pod on, beside the cluster as it is: one
// new node at a time, with its DaemonSet pods, as the scheduler would see it once registered.
// A pool whose minValues the pod's offerings cannot meet is left out, as it may not launch them.
func (f *Fitter) FitsNew(ctx context.Context, r *Reading, pod *corev1.Pod) []string {
	byPool := map[string][]offering{}
	var order []string
	bound, nodes := r.podsOnLiveNodes(), r.liveNodes()
	for _, o := range f.offerings {
		ni := framework.NewNodeInfo()
		ni.SetNode(o.node)
		pods := bound
		for _, d := range o.daemons {
			ni.AddPod(d)
			pods = append(pods[:len(pods):len(pods)], d)
		}
		f.sim.Use(schedcache.NewSnapshot(pods, append(nodes[:len(nodes):len(nodes)], o.node)))
		state, _, st := f.sim.PreFilter(ctx, pod)
		if st != nil || !f.sim.Filter(ctx, state, pod, ni).IsSuccess() {
			continue
		}
		if byPool[o.pool.Name] == nil {
			order = append(order, o.pool.Name)
		}
		byPool[o.pool.Name] = append(byPool[o.pool.Name], o)
	}
	var out []string
	for _, name := range order {
		fits := byPool[name]
		if !meetsMinValues(fits[0].pool, fits) {
			continue
		}
		out = append(out, fits[0].String())
	}
	return out
}

// meetsMinValues: the offerings span at least minValues values of each key that sets one.
func meetsMinValues(pool *karpv1.NodePool, fits []offering) bool {
	for _, req := range pool.Spec.Template.Spec.Requirements {
		if req.MinValues == nil {
			continue
		}
		values := map[string]bool{}
		for _, o := range fits {
			values[o.node.Labels[req.Key]] = true
		}
		if len(values) < *req.MinValues {
			return false
		}
	}
	return true
}

// withinLimits: one more node of it keeps the pool within its limits.
func withinLimits(pool *karpv1.NodePool, used corev1.ResourceList, it *cloud.InstanceType) bool {
	if len(pool.Spec.Limits) == 0 {
		return true
	}
	want := scheduling.Add(scheduling.Add(used, it.Capacity), corev1.ResourceList{"nodes": resource.MustParse("1")})
	_, over := scheduling.Exceeds(want, corev1.ResourceList(pool.Spec.Limits))
	return !over
}

// usedByPool sums the capacity of each pool's NodeClaims, as limits count it.
func usedByPool(claims []karpv1.NodeClaim) map[string]corev1.ResourceList {
	out := map[string]corev1.ResourceList{}
	for _, c := range claims {
		pool := c.Labels[karpv1.NodePoolLabelKey]
		out[pool] = scheduling.Add(out[pool], c.Status.Capacity)
		out[pool] = scheduling.Add(out[pool], corev1.ResourceList{"nodes": resource.MustParse("1")})
	}
	return out
}
