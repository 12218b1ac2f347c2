package disruption

import (
	"crypto/sha256"
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// twins are, for one pass of single-node consolidation, why it refused each shape of candidate
// it simulated. Two candidates of one shape are interchangeable: the same pool,
// offering, labels (the node's name aside), taints and allocatable, holding pods that differ only
// in their names. Removing one leaves a cluster that is the mirror image of the cluster removing
// the other leaves, so the simulation would give the same answer; a fleet of 5,000 nodes that a
// few Deployments fill has a few dozen shapes, and the pass simulates each once instead of every
// node until its deadline.
//
// A candidate with a pod whose placement hangs on something the shape does not show (a
// PersistentVolumeClaim or an ephemeral volume, bound to its own volume and zone; a
// ResourceClaim, bound to its own devices) has no twin and is always simulated.
type twins map[[sha256.Size]byte]string

// nodeShape is what of a candidate's node a simulation of its removal can see, besides its pods.
type nodeShape struct {
	Pool          string
	Labels        map[string]string
	Taints        []corev1.Taint
	Allocatable   corev1.ResourceList
	Unschedulable bool
	Price         float64
	Priced        bool
	Pods          [][sha256.Size]byte
}

// podShape is what of a pod the planner's Filter plugins and the disruption checks can see,
// without its name, its node or the volumes every pod has one of its own (service account tokens).
type podShape struct {
	Namespace        string
	Labels           map[string]string
	Controller       types.UID
	Requests         corev1.ResourceList
	NodeSelector     map[string]string
	Affinity         *corev1.Affinity
	Tolerations      []corev1.Toleration
	Spread           []corev1.TopologySpreadConstraint
	Priority         *int32
	PreemptionPolicy *corev1.PreemptionPolicy
	RuntimeClass     *string
	HostPorts        []corev1.ContainerPort
}

// shapeOf returns c's shape, or false when c can have no twin.
func shapeOf(c *Candidate) ([sha256.Size]byte, bool) {
	s := nodeShape{Pool: c.Pool.Name, Labels: map[string]string{}, Taints: c.Node.Spec.Taints,
		Allocatable: c.Node.Status.Allocatable, Unschedulable: c.Node.Spec.Unschedulable, Price: c.Price, Priced: c.Priced}
	for k, v := range c.Node.Labels {
		// The hostname label, and any other naming the node, are the node's own.
		if k != corev1.LabelHostname && v != c.Node.Name {
			s.Labels[k] = v
		}
	}
	for _, p := range c.Pods {
		key, ok := podShapeOf(p)
		if !ok {
			return [sha256.Size]byte{}, false
		}
		s.Pods = append(s.Pods, key)
	}
	slices.SortFunc(s.Pods, func(a, b [sha256.Size]byte) int { return slices.Compare(a[:], b[:]) })
	return hashOf(s)
}

func podShapeOf(p *corev1.Pod) ([sha256.Size]byte, bool) {
	if len(p.Spec.ResourceClaims) > 0 {
		return [sha256.Size]byte{}, false
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return [sha256.Size]byte{}, false
		}
	}
	s := podShape{Namespace: p.Namespace, Labels: p.Labels, Requests: scheduling.PodRequests(p),
		NodeSelector: p.Spec.NodeSelector, Affinity: p.Spec.Affinity, Tolerations: p.Spec.Tolerations,
		Spread: p.Spec.TopologySpreadConstraints, Priority: p.Spec.Priority, PreemptionPolicy: p.Spec.PreemptionPolicy,
		RuntimeClass: p.Spec.RuntimeClassName}
	if owner := metav1.GetControllerOf(p); owner != nil {
		s.Controller = owner.UID
	}
	for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
		for _, port := range c.Ports {
			if port.HostPort != 0 {
				s.HostPorts = append(s.HostPorts, port)
			}
		}
	}
	return hashOf(s)
}

// hashOf hashes v's JSON, whose maps encoding/json writes in key order.
func hashOf(v any) ([sha256.Size]byte, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256(b), true
}
