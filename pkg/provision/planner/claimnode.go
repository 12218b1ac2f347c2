package planner

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
)

// trialShell names the template of one offering of a claim labelled with values a pod tries.
type trialShell struct {
	offering int
	choice   string
}

// placementView is the claim as offering i, labelled with its chosen custom labels and choice,
// with its pods: what the placement plugins read. It is written into view. SetNode, which parses
// the node's allocatable, runs once per offering and claim (and per choice tried); each view then
// takes the claim's pods as they are now.
func (oc *openClaim) placementView(i int, choice nodepool.LabelChoice, view *framework.NodeInfo) *framework.NodeInfo {
	var shell *framework.NodeInfo
	if len(choice) == 0 {
		var ok bool
		if shell, ok = oc.shells[i]; !ok {
			shell = framework.NewNodeInfo()
			shell.SetNode(oc.pool.Compatible[i].TemplateNode(oc.name, oc.chosen))
			oc.shells[i] = shell
		}
	} else {
		key := trialShell{offering: i, choice: choice.String()}
		var ok bool
		if shell, ok = oc.trials[key]; !ok {
			shell = framework.NewNodeInfo()
			shell.SetNode(oc.pool.Compatible[i].TemplateNode(oc.name, oc.chosen, choice))
			if oc.trials == nil {
				oc.trials = map[trialShell]*framework.NodeInfo{}
			}
			oc.trials[key] = shell
		}
	}
	*view = *shell
	from := oc.info
	view.Pods, view.PodsWithAffinity, view.PodsWithRequiredAntiAffinity = from.Pods, from.PodsWithAffinity, from.PodsWithRequiredAntiAffinity
	view.UsedPorts, view.Requested, view.NonZeroRequested = from.UsedPorts, from.Requested, from.NonZeroRequested
	view.ImageStates, view.PVCRefCounts, view.NodeAllocatableDRAClaimStates = from.ImageStates, from.PVCRefCounts, from.NodeAllocatableDRAClaimStates
	view.Generation = from.Generation
	return view
}

// plannedNode is the node the claim will become, as far as every alive offering agrees: its name
// and hostname, the labels all of them share, and the custom labels its pods chose. A domain they
// do not agree on is left out rather than guessed, so plugins count the claim's pods in it for
// no one; pods that are counted per domain settle the claim into one first (see settle).
func (oc *openClaim) plannedNode() *corev1.Node {
	compatible := oc.pool.Compatible
	first := compatible[oc.alive[0]].TemplateNode(oc.name)
	labels := first.Labels
	// Only the keys on which the pool's offerings differ can differ among alive.
	for _, k := range oc.pool.VaryingKeys() {
		v, ok := labels[k]
		if !ok || k == corev1.LabelHostname {
			continue
		}
		for _, i := range oc.alive[1:] {
			if w, ok := compatible[i].Labels[k]; !ok || w != v {
				delete(labels, k)
				break
			}
		}
	}
	for _, kv := range oc.chosen {
		labels[kv.Key] = kv.Value
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: oc.name, Labels: labels}, Spec: first.Spec}
}

// customLabels are the labels the claim's NodeClaim carries for the pool's free keys: the values
// its pods chose, and for a key none of them read, the first value the pool lists (the node must
// carry one to meet the pool's requirement; every value is alike to pods that do not read it).
// A key that allows any value is always chosen by the pod that opened the claim.
func (oc *openClaim) customLabels() map[string]string {
	out := oc.chosen.Labels()
	for _, f := range oc.pool.Free {
		if _, ok := out[f.Key]; !ok && len(f.Values) > 0 {
			if out == nil {
				out = map[string]string{}
			}
			out[f.Key] = f.Values[0]
		}
	}
	return out
}
