package harness

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Reading is the cluster as the checks see it, read from the API server alone.
type Reading struct {
	*sandbox.State
	Pools      []karpv1.NodePool
	DaemonSets []appsv1.DaemonSet
	// Jobs say how many of their pods have succeeded: such a pod goes with its node when
	// consolidation removes the node, and the Job, complete, makes no other.
	Jobs []batchv1.Job
	// Storage holds the PersistentVolumeClaims, PersistentVolumes and StorageClasses, which the
	// Filter plugins read to place a pod with volumes.
	Storage []runtime.Object
}

// Read takes a reading of the cluster.
func Read(ctx context.Context, c *sandbox.Cluster) (*Reading, error) {
	s, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	r := &Reading{State: s}
	pools, err := c.Tailor.KarpenterV1().NodePools().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	r.Pools = pools.Items
	dss, err := c.Kube.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	r.DaemonSets = dss.Items
	jobs, err := c.Kube.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	r.Jobs = jobs.Items
	if r.Storage, err = readStorage(ctx, c.Kube); err != nil {
		return nil, err
	}
	return r, nil
}

// Fingerprint changes whenever a node comes or goes, or a pod moves, changes phase or is
// nominated: two equal fingerprints some seconds apart mean nothing was happening.
func (r *Reading) Fingerprint() string {
	var parts []string
	for _, n := range r.Nodes {
		parts = append(parts, fmt.Sprintf("n/%s/%d/%v", n.Name, len(n.Spec.Taints), n.DeletionTimestamp != nil))
	}
	for _, p := range r.Pods {
		parts = append(parts, fmt.Sprintf("p/%s/%s/%s/%s/%s", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.NominatedNodeName))
	}
	for _, c := range r.Claims {
		parts = append(parts, fmt.Sprintf("c/%s/%v", c.Name, c.IsTrue(karpv1.ConditionTypeInitialized)))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Pending are the pods no node holds yet, not being deleted.
func (r *Reading) Pending() []*corev1.Pod {
	var out []*corev1.Pod
	for i := range r.Pods {
		p := &r.Pods[i]
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodPending {
			out = append(out, p)
		}
	}
	return out
}

// liveNodes are the nodes the scheduler may place pods on: registered, not being deleted.
func (r *Reading) liveNodes() []*corev1.Node {
	var out []*corev1.Node
	for i := range r.Nodes {
		if r.Nodes[i].DeletionTimestamp == nil {
			out = append(out, &r.Nodes[i])
		}
	}
	return out
}

// boundPods are the pods the scheduler counts on nodes: bound and not finished.
func (r *Reading) boundPods() []*corev1.Pod {
	var out []*corev1.Pod
	for i := range r.Pods {
		p := &r.Pods[i]
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// podsOnLiveNodes are the bound pods on the nodes liveNodes returns. A snapshot must be given
// only those: a pod whose node is gone or going would make the snapshot hold a node with no Node,
// which the scheduler's own cache never does and its plugins do not expect (PodTopologySpread's
// PreFilter dereferences every node's labels; seed 1582 crashed the harness so).
func (r *Reading) podsOnLiveNodes() []*corev1.Pod {
	live := map[string]bool{}
	for _, n := range r.liveNodes() {
		live[n.Name] = true
	}
	var out []*corev1.Pod
	for _, p := range r.boundPods() {
		if live[p.Spec.NodeName] {
			out = append(out, p)
		}
	}
	return out
}

func (r *Reading) podsOn(node string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range r.boundPods() {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out
}

func (r *Reading) node(name string) *corev1.Node {
	for i := range r.Nodes {
		if r.Nodes[i].Name == name {
			return &r.Nodes[i]
		}
	}
	return nil
}

// launched are the nodes Tailor launched: those a NodeClaim names.
func (r *Reading) launched() map[string]*karpv1.NodeClaim {
	out := map[string]*karpv1.NodeClaim{}
	for _, c := range r.Claims {
		if c.Status.NodeName != "" {
			out[c.Status.NodeName] = &c
		}
	}
	return out
}

// workloadPods counts, for each node, the pods other than DaemonSet pods that were ever bound
// to it and are still in the API (a finished Job's pods stay, and count as use).
func (r *Reading) workloadPods() map[string]int {
	out := map[string]int{}
	for _, p := range r.Pods {
		if p.Spec.NodeName != "" && !scheduling.IsDaemonSetPod(&p) {
			out[p.Spec.NodeName]++
		}
	}
	return out
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func readStorage(ctx context.Context, kube kubernetes.Interface) ([]runtime.Object, error) {
	var out []runtime.Object
	claims, err := kube.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range claims.Items {
		out = append(out, &claims.Items[i])
	}
	volumes, err := kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range volumes.Items {
		out = append(out, &volumes.Items[i])
	}
	classes, err := kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range classes.Items {
		out = append(out, &classes.Items[i])
	}
	return out, nil
}
