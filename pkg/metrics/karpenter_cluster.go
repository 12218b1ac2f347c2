package metrics

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// ClusterSource lists what Karpenter's cluster gauges are computed from, at scrape time, from the
// informers' caches: a gauge kept up to date by hand drifts from the cluster and leaves series of
// deleted nodes and pods behind.
type ClusterSource struct {
	Nodes     func() []*corev1.Node
	Pods      func() []*corev1.Pod
	NodePools func() []*karpv1.NodePool
	// NodeClaims, if set, also serves the NodeClaims' status condition gauges.
	NodeClaims func() []*karpv1.NodeClaim
	Now        func() time.Time
}

var clusterSource atomic.Pointer[ClusterSource]

// SetClusterSource makes the karpenter_nodes_*, karpenter_pods_state, karpenter_nodepools_* and
// karpenter_cluster_utilization_percent gauges read the cluster from s.
func SetClusterSource(s ClusterSource) { clusterSource.Store(&s) }

// nodeLabelNames maps each well-known node label to the metric label Karpenter names it by: the
// part after the slash, lower-cased, dashes as underscores (karpenter.sh/capacity-type is
// capacity_type). Sorted, so two keys with one name always resolve the same way.
var nodeLabelKeys, nodeLabelNames = func() ([]string, []string) {
	keys := sort.StringSlice(karpv1.WellKnownLabels.UnsortedList())
	keys.Sort()
	seen := map[string]bool{}
	var ks, names []string
	for _, k := range keys {
		_, name, ok := strings.Cut(k, "/")
		name = strings.ReplaceAll(strings.ToLower(name), "-", "_")
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		ks, names = append(ks, k), append(names, name)
	}
	return ks, names
}()

func gaugeDesc(subsystem, name, help string, labels []string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(karpenterNamespace, subsystem, name), help, labels, nil)
}

var (
	nodeResourceLabels = append(append([]string{}, nodeLabelNames...), "node_name", "phase", "managed", "resource_type")
	nodeAllocatable    = gaugeDesc("nodes", "allocatable", "Node allocatable are the resources allocatable by nodes.", nodeResourceLabels)
	nodePodRequests    = gaugeDesc("nodes", "total_pod_requests", "Node total pod requests are the resources requested by pods bound to nodes, including the DaemonSet pods.", nodeResourceLabels)
	nodePodLimits      = gaugeDesc("nodes", "total_pod_limits", "Node total pod limits are the resources specified by pod limits, including the DaemonSet pods.", nodeResourceLabels)
	nodeDSRequests     = gaugeDesc("nodes", "total_daemon_requests", "Node total daemon requests are the resource requested by DaemonSet pods bound to nodes.", nodeResourceLabels)
	nodeDSLimits       = gaugeDesc("nodes", "total_daemon_limits", "Node total daemon limits are the resources specified by DaemonSet pod limits.", nodeResourceLabels)
	nodeOverhead       = gaugeDesc("nodes", "system_overhead", "Node system daemon overhead are the resources reserved for system overhead, the difference between the node's capacity and allocatable values are reported by the status.", nodeResourceLabels)
	nodeLifetime       = gaugeDesc("nodes", "current_lifetime_seconds", "Node age in seconds", nodeResourceLabels[:len(nodeResourceLabels)-1])
	utilization        = gaugeDesc("cluster", "utilization_percent", "Utilization of allocatable resources by pod requests", []string{"resource_type"})
	poolUsage          = gaugeDesc("nodepools", "usage", "The amount of resources that have been provisioned for a nodepool. Labeled by nodepool name and resource type.", []string{"resource_type", "nodepool"})
	poolLimit          = gaugeDesc("nodepools", "limit", "Limits specified on the nodepool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.", []string{"resource_type", "nodepool"})
	podState           = gaugeDesc("pods", "state", "Pod state is the current state of pods. This metric can be used several ways as it is labeled by the pod name, namespace, owner, node, nodepool name, zone, architecture, capacity type, instance type, pod phase, and pod readiness.",
		[]string{"name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase", "ready", "managed"})
	podUnstarted = gaugeDesc("pods", "unstarted_time_seconds", "The time from pod creation until the pod is running.", []string{"name", "namespace"})
	podUnbound   = gaugeDesc("pods", "unbound_time_seconds", "The time from pod creation until the pod is bound.", []string{"name", "namespace"})
)

type clusterCollector struct{}

func (clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeAllocatable, nodePodRequests, nodePodLimits, nodeDSRequests, nodeDSLimits,
		nodeOverhead, nodeLifetime, utilization, poolUsage, poolLimit, podState, conditionCount, conditionCurrentSeconds, terminationCurrentSeconds, podUnstarted, podUnbound} {
		ch <- d
	}
}

// nodeUse is what the pods bound to one node ask for.
type nodeUse struct{ requests, limits, dsRequests, dsLimits corev1.ResourceList }

func (clusterCollector) Collect(ch chan<- prometheus.Metric) {
	src := clusterSource.Load()
	if src == nil {
		return
	}
	nodes, pods := src.Nodes(), src.Pods()
	byName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	use := map[string]*nodeUse{}
	for _, p := range pods {
		collectPod(ch, p, byName[p.Spec.NodeName])
		if p.Status.Phase == corev1.PodPending {
			age := src.Now().Sub(p.CreationTimestamp.Time).Seconds()
			ch <- prometheus.MustNewConstMetric(podUnstarted, prometheus.GaugeValue, age, p.Name, p.Namespace)
			if !isTrue(p, corev1.PodScheduled) {
				ch <- prometheus.MustNewConstMetric(podUnbound, prometheus.GaugeValue, age, p.Name, p.Namespace)
			}
		}
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		u := use[p.Spec.NodeName]
		if u == nil {
			u = &nodeUse{corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}}
			use[p.Spec.NodeName] = u
		}
		req, lim := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}), resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
		scheduling.AddTo(u.requests, req)
		scheduling.AddTo(u.limits, lim)
		if ownedByDaemonSet(p) {
			scheduling.AddTo(u.dsRequests, req)
			scheduling.AddTo(u.dsLimits, lim)
		}
	}
	allocated, requested := corev1.ResourceList{}, corev1.ResourceList{}
	for _, n := range nodes {
		u := use[n.Name]
		if u == nil {
			u = &nodeUse{}
		}
		labels := nodeLabelValues(n)
		overhead := corev1.ResourceList{}
		for name, c := range n.Status.Capacity {
			if a, ok := n.Status.Allocatable[name]; ok {
				c = c.DeepCopy()
				c.Sub(a)
				overhead[name] = c
			}
		}
		for desc, list := range map[*prometheus.Desc]corev1.ResourceList{nodeAllocatable: n.Status.Allocatable,
			nodePodRequests: u.requests, nodePodLimits: u.limits, nodeDSRequests: u.dsRequests, nodeDSLimits: u.dsLimits, nodeOverhead: overhead} {
			for name, q := range list {
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, value(name, q), append(labels, resourceType(name))...)
			}
		}
		ch <- prometheus.MustNewConstMetric(nodeLifetime, prometheus.GaugeValue, src.Now().Sub(n.CreationTimestamp.Time).Seconds(), labels...)
		scheduling.AddTo(allocated, n.Status.Allocatable)
		scheduling.AddTo(requested, u.requests)
	}
	for name, a := range allocated {
		if v := value(name, a); v > 0 {
			ch <- prometheus.MustNewConstMetric(utilization, prometheus.GaugeValue, 100*value(name, requested[name])/v, resourceType(name))
		}
	}
	if src.NodeClaims != nil {
		collectClaims(ch, src.NodeClaims(), src.Now())
	}
	for _, pool := range src.NodePools() {
		for desc, list := range map[*prometheus.Desc]corev1.ResourceList{poolUsage: pool.Status.Resources, poolLimit: corev1.ResourceList(pool.Spec.Limits)} {
			for name, q := range list {
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, value(name, q), resourceType(name), pool.Name)
			}
		}
	}
}

func collectPod(ch chan<- prometheus.Metric, p *corev1.Pod, node *corev1.Node) {
	owner := ""
	if len(p.OwnerReferences) > 0 {
		o := p.OwnerReferences[0]
		owner = fmt.Sprintf("/apis/%s/namespaces/%s/%ss/%s", o.APIVersion, p.Namespace, strings.ToLower(o.Kind), o.Name)
	}
	nl := map[string]string{}
	if node != nil {
		nl = node.Labels
	}
	ch <- prometheus.MustNewConstMetric(podState, prometheus.GaugeValue, 1, p.Name, p.Namespace, owner, p.Spec.NodeName,
		strconv.FormatBool(p.Spec.NodeName != ""), nl[karpv1.NodePoolLabelKey], nl[corev1.LabelTopologyZone], nl[corev1.LabelArchStable],
		nl[karpv1.CapacityTypeLabelKey], nl[corev1.LabelInstanceTypeStable], string(p.Status.Phase),
		strconv.FormatBool(isTrue(p, corev1.PodReady)), strconv.FormatBool(nl[karpv1.NodePoolLabelKey] != ""))
}

func nodeLabelValues(n *corev1.Node) []string {
	out := make([]string, 0, len(nodeResourceLabels))
	for _, k := range nodeLabelKeys {
		out = append(out, n.Labels[k])
	}
	return append(out, n.Name, string(n.Status.Phase), strconv.FormatBool(n.Labels[karpv1.NodePoolLabelKey] != ""))
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

// value is a quantity as Karpenter serves it: cores for cpu, units (bytes, pods) otherwise.
func value(name corev1.ResourceName, q resource.Quantity) float64 {
	if name == corev1.ResourceCPU {
		return float64(q.MilliValue()) / 1000
	}
	return float64(q.Value())
}

func resourceType(name corev1.ResourceName) string {
	return strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")
}
