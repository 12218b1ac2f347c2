package sandbox

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// Report is what `tailor sandbox --report json` prints: the fleet, its price and every pod.
type Report struct {
	Settled      bool         `json:"settled"`
	Seconds      float64      `json:"seconds"`
	PricePerHour float64      `json:"pricePerHour"`
	Nodes        []NodeReport `json:"nodes"`
	Pods         []PodReport  `json:"pods"`
	// Stranded are the pods Tailor found pending beside the node a plan put them on (a Stranded
	// Event each), and UnusedNodes the NodeClaims it launched that no pod landed on (an Unused
	// Event each), over the whole run: both should be empty.
	Stranded    []Finding `json:"stranded"`
	UnusedNodes []Finding `json:"unusedNodes"`
	// NodeClasses say whether each EC2NodeClass resolved, and if not why: the first thing to
	// look at when manifests written for another cluster launch nothing.
	NodeClasses []NodeClassReport `json:"nodeClasses,omitempty"`
}

// Finding is an object Tailor reported a fault of, and what it said.
type Finding struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// NodeClassReport is one EC2NodeClass's Ready condition.
type NodeClassReport struct {
	Name    string `json:"name"`
	Ready   string `json:"ready"`
	Message string `json:"message,omitempty"`
}

// NodeReport is one node of the fleet.
type NodeReport struct {
	Name         string              `json:"name"`
	NodePool     string              `json:"nodePool"`
	InstanceType string              `json:"instanceType"`
	Zone         string              `json:"zone"`
	CapacityType string              `json:"capacityType"`
	PricePerHour float64             `json:"pricePerHour"`
	Labels       map[string]string   `json:"labels"`
	Allocatable  corev1.ResourceList `json:"allocatable"`
	Pods         []string            `json:"pods"`
}

// PodReport is one pod: where it runs, or why it does not.
type PodReport struct {
	Name   string `json:"name"`
	Node   string `json:"node"`
	Phase  string `json:"phase"`
	Reason string `json:"reason,omitempty"`
}

// State is a reading of the cluster, from which both settling and the report are derived.
type State struct {
	Nodes  []corev1.Node
	Pods   []corev1.Pod
	Claims []karpv1.NodeClaim
	// Explained maps pods to the latest reason Tailor gave for not placing them.
	Explained map[string]string
	// Stranded and Unused are what Tailor's Stranded and Unused Events said, by object.
	Stranded, Unused []Finding
	// Unfinished counts Deployments whose ReplicaSets have not yet made all their pods.
	Unfinished int
}

// Read takes a reading of the cluster.
func (c *Cluster) Read(ctx context.Context) (*State, error) {
	s := &State{Explained: map[string]string{}}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	s.Nodes = nodes.Items
	pods, err := c.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	s.Pods = pods.Items
	claims, err := c.Tailor.KarpenterV1().NodeClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	s.Claims = claims.Items
	events, err := c.Kube.EventsV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedProvisioning"})
	if err != nil {
		return nil, err
	}
	latest := map[string]metav1.MicroTime{}
	for _, ev := range events.Items {
		key := ev.Regarding.Namespace + "/" + ev.Regarding.Name
		seen := eventTime(ev.EventTime, ev.DeprecatedLastTimestamp)
		if prev, ok := latest[key]; !ok || prev.Before(&seen) {
			latest[key] = seen
			s.Explained[key] = ev.Note
		}
	}
	if s.Stranded, err = c.findings(ctx, "Stranded"); err != nil {
		return nil, err
	}
	if s.Unused, err = c.findings(ctx, "Unused"); err != nil {
		return nil, err
	}
	deps, err := c.Kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, d := range deps.Items {
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if d.Status.ObservedGeneration < d.Generation || d.Status.Replicas != want {
			s.Unfinished++
		}
	}
	return s, nil
}

// findings lists the Events of one reason, oldest first, as object and note.
func (c *Cluster) findings(ctx context.Context, reason string) ([]Finding, error) {
	events, err := c.Kube.EventsV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		return nil, err
	}
	sort.Slice(events.Items, func(i, j int) bool {
		a := eventTime(events.Items[i].EventTime, events.Items[i].DeprecatedLastTimestamp)
		b := eventTime(events.Items[j].EventTime, events.Items[j].DeprecatedLastTimestamp)
		return a.Before(&b)
	})
	out := []Finding{}
	for _, ev := range events.Items {
		name := ev.Regarding.Name
		if ev.Regarding.Namespace != "" {
			name = ev.Regarding.Namespace + "/" + name
		}
		out = append(out, Finding{Name: name, Message: ev.Note})
	}
	return out, nil
}

func eventTime(t metav1.MicroTime, deprecated metav1.Time) metav1.MicroTime {
	if t.IsZero() {
		return metav1.NewMicroTime(deprecated.Time)
	}
	return t
}

// Settled reports whether nothing more will happen on its own: every workload made its pods,
// every pod runs or Tailor has said why it cannot place it, and every NodeClaim is initialized.
func (s *State) Settled() bool {
	if s.Unfinished > 0 {
		return false
	}
	for _, c := range s.Claims {
		if !c.IsTrue(karpv1.ConditionTypeInitialized) {
			return false
		}
	}
	for _, p := range s.Pods {
		if p.DeletionTimestamp != nil {
			return false
		}
		switch p.Status.Phase {
		case corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed:
			continue
		}
		if p.Spec.NodeName != "" {
			return false
		}
		if _, explained := s.Explained[p.Namespace+"/"+p.Name]; !explained {
			return false
		}
	}
	return true
}

// Report builds the report, pricing nodes with the cloud's current offerings.
func (s *State) Report(ctx context.Context, cp cloud.CloudProvider, pools []karpv1.NodePool) Report {
	prices := map[cloud.OfferingKey]float64{}
	for _, np := range pools {
		its, err := cp.InstanceTypes(ctx, &np)
		if err != nil {
			continue
		}
		for _, it := range its {
			for _, o := range it.Offerings {
				prices[cloud.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}] = o.PricePerHour
			}
		}
	}
	r := Report{Settled: s.Settled(), Nodes: []NodeReport{}, Pods: []PodReport{}, Stranded: s.Stranded, UnusedNodes: s.Unused}
	podsOn := map[string][]string{}
	for _, p := range s.Pods {
		name := p.Namespace + "/" + p.Name
		pr := PodReport{Name: name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase)}
		if p.Spec.NodeName == "" {
			pr.Reason = s.Explained[name]
			if pr.Reason == "" {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
						pr.Reason = c.Message
					}
				}
			}
		} else {
			podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], name)
		}
		r.Pods = append(r.Pods, pr)
	}
	for _, n := range s.Nodes {
		l := n.Labels
		nr := NodeReport{
			Name: n.Name, NodePool: l[karpv1.NodePoolLabelKey], InstanceType: l[corev1.LabelInstanceTypeStable],
			Zone: l[corev1.LabelTopologyZone], CapacityType: l[karpv1.CapacityTypeLabelKey],
			Labels: l, Allocatable: n.Status.Allocatable, Pods: podsOn[n.Name],
		}
		if nr.Pods == nil {
			nr.Pods = []string{}
		}
		sort.Strings(nr.Pods)
		nr.PricePerHour = prices[cloud.OfferingKey{InstanceType: nr.InstanceType, Zone: nr.Zone, CapacityType: nr.CapacityType}]
		r.PricePerHour += nr.PricePerHour
		r.Nodes = append(r.Nodes, nr)
	}
	sort.Slice(r.Nodes, func(i, j int) bool { return r.Nodes[i].Name < r.Nodes[j].Name })
	sort.Slice(r.Pods, func(i, j int) bool { return r.Pods[i].Name < r.Pods[j].Name })
	return r
}
