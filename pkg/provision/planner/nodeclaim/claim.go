package nodeclaim

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// MaxInstanceTypes is how many instance types a NodeClaim offers the cloud to fall back on, as
// the AWS provider truncates to.
const MaxInstanceTypes = 60

// New turns a planned claim into the NodeClaim to create: the NodePool's template, plus
// requirements that narrow it to the offerings every planned pod passed the Filters on.
func New(pc *Planned) *karpv1.NodeClaim {
	pool := pc.NodePool
	tmpl := pool.Spec.Template
	labels, custom := nodeClaimLabels(pc)
	labels[karpv1.NodePoolLabelKey] = pool.Name
	annotations := map[string]string{}
	for k, v := range tmpl.Annotations {
		annotations[k] = v
	}
	// The template hash it was made from: the drift controller compares it with the pool's.
	annotations[karpv1.NodePoolHashAnnotationKey] = pool.Hash()
	annotations[karpv1.NodePoolHashVersionAnnotationKey] = karpv1.NodePoolHashVersion

	types, zones, capacityTypes := offeredValues(pc.Options)
	reqs := append([]karpv1.NodeSelectorRequirementWithMinValues{}, tmpl.Spec.Requirements...)
	reqs = append(reqs, custom...)
	reqs = append(reqs,
		karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: types},
		karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones},
		karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: capacityTypes},
	)
	if pc.MinValuesShort != "" {
		// BestEffort: launch with what there is, say so, and ask no more than that of the cloud.
		annotations[MinValuesRelaxedAnnotationKey] = "true"
		reqs = relaxMinValues(reqs, pc.Options)
	}
	requests := corev1.ResourceList{}
	for _, p := range append(append([]*corev1.Pod{}, pc.Pods...), pc.Daemons...) {
		requests = scheduling.Add(requests, scheduling.PodRequests(p))
	}
	blockOwnerDeletion := true
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: pool.Name + "-",
			Labels:       labels,
			Annotations:  annotations,
			// Created with the finalizer that the lifecycle controller would otherwise add in a
			// write of its own before launching: a NodeClaim write fewer each, of about six.
			Finalizers: []string{karpv1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         karpv1.SchemeGroupVersion.String(),
				Kind:               "NodePool",
				Name:               pool.Name,
				UID:                pool.UID,
				BlockOwnerDeletion: &blockOwnerDeletion,
			}},
		},
		Spec: karpv1.NodeClaimSpec{
			Taints:                 tmpl.Spec.Taints,
			StartupTaints:          tmpl.Spec.StartupTaints,
			Requirements:           reqs,
			Resources:              karpv1.ResourceRequirements{Requests: requests},
			NodeClassRef:           tmpl.Spec.NodeClassRef,
			ExpireAfter:            tmpl.Spec.ExpireAfter,
			TerminationGracePeriod: tmpl.Spec.TerminationGracePeriod,
		},
	}
}

// nodeClaimLabels are the labels of the claim's node: the template's, the custom labels its
// pool pins to one value, and the value chosen for each custom key the pool leaves open, which
// custom also requires, so that the node registers with the value its pods were placed for.
func nodeClaimLabels(pc *Planned) (labels map[string]string, custom []karpv1.NodeSelectorRequirementWithMinValues) {
	pool := pc.NodePool
	tmpl := pool.Spec.Template
	labels = map[string]string{}
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	if len(pc.Options) > 0 {
		// Custom labels the pool's requirements pin to one value are part of the claim's
		// identity; an instance type's own label for the key is the cloud's to set.
		types := make([]*cloud.InstanceType, len(pc.Options))
		for i, o := range pc.Options {
			types[i] = o.InstanceType
		}
		pinned, free, _ := nodepool.CustomKeys(pool, scheduling.NodeSelectorRequirements(tmpl.Spec.Requirements), types)
		for k, v := range pinned {
			if pc.Options[0].InstanceType.Labels[k] == "" {
				labels[k] = v
			}
		}
		// A key the requirements leave open gets the value the plan chose, or the first the pool
		// lists, as a label and as a requirement: the claim then says which value its node has.
		chosen := maps.Clone(pc.Labels)
		for _, f := range free {
			if _, ok := chosen[f.Key]; !ok && len(f.Values) > 0 {
				if chosen == nil {
					chosen = map[string]string{}
				}
				chosen[f.Key] = f.Values[0]
			}
		}
		for _, k := range slices.Sorted(maps.Keys(chosen)) {
			labels[k] = chosen[k]
			custom = append(custom, karpv1.NodeSelectorRequirementWithMinValues{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{chosen[k]}})
		}
	}
	return labels, custom
}

// offeredValues are the instance types, zones and capacity types of the options, the types in
// the options' order (cheapest first) and the others sorted. The planner keeps at most
// MaxInstanceTypes types, more only where a requirement's minValues needs them (see widen).
func offeredValues(options []Option) (types, zones, capacityTypes []string) {
	seen := map[string]bool{}
	for _, o := range options {
		if !seen["t/"+o.InstanceType.Name] {
			seen["t/"+o.InstanceType.Name] = true
			types = append(types, o.InstanceType.Name)
		}
	}
	for _, o := range options {
		if !seen["t/"+o.InstanceType.Name] {
			continue
		}
		if !seen["z/"+o.Offering.Zone] {
			seen["z/"+o.Offering.Zone] = true
			zones = append(zones, o.Offering.Zone)
		}
		if !seen["c/"+o.Offering.CapacityType] {
			seen["c/"+o.Offering.CapacityType] = true
			capacityTypes = append(capacityTypes, o.Offering.CapacityType)
		}
	}
	sort.Strings(zones)
	sort.Strings(capacityTypes)
	return types, zones, capacityTypes
}

// relaxMinValues lowers each requirement's minValues to the number of values the options have.
func relaxMinValues(reqs []karpv1.NodeSelectorRequirementWithMinValues, options []Option) []karpv1.NodeSelectorRequirementWithMinValues {
	out := make([]karpv1.NodeSelectorRequirementWithMinValues, len(reqs))
	for i, r := range reqs {
		out[i] = r
		if r.MinValues == nil {
			continue
		}
		n := OptionValues(options, r.Key)
		if n < *r.MinValues {
			n = max(1, n)
			out[i].MinValues = &n
		}
	}
	return out
}

func offeringValue(o Option, key string) string {
	switch key {
	case corev1.LabelTopologyZone:
		return o.Offering.Zone
	case karpv1.CapacityTypeLabelKey:
		return o.Offering.CapacityType
	}
	return ""
}

// Planned is a NodeClaim to launch: a NodePool, the pods it is for, and the offerings it
// may be launched as, cheapest first. Every option passes every Filter plugin for every pod.
type Planned struct {
	NodePool *karpv1.NodePool
	Pods     []*corev1.Pod
	Options  []Option
	// Daemons are the DaemonSet pods that will run on the node beside Pods (on its cheapest
	// option); their requests are part of what the node must hold.
	Daemons []*corev1.Pod
	// MinValuesShort says which requirements' minValues the options fall short of, or "".
	MinValuesShort string
	// Labels are the values the plan chose for custom label keys that the NodePool's requirements
	// leave open (several values, or any): the NodeClaim carries each as a label and as a
	// single-value requirement, so the node registers with the value its pods were placed for.
	Labels map[string]string
}

// Option is one offering a planned claim can launch as.
type Option struct {
	InstanceType *cloud.InstanceType
	Offering     cloud.Offering
}

// MinValuesRelaxedAnnotationKey marks a NodeClaim launched with fewer values than a requirement's
// minValues asked for, under the BestEffort policy.
const MinValuesRelaxedAnnotationKey = karpv1.Group + "/nodeclaim-min-values-relaxed"

// OptionsShort says which of the pool's requirements with minValues the options fall short of,
// or "": for a caller that narrows a planned claim's options (consolidation keeps the cheaper
// ones) and must not narrow them below what the pool asks for.
func OptionsShort(pool *karpv1.NodePool, options []Option) string {
	var short []string
	for _, r := range pool.Spec.Template.Spec.Requirements {
		if r.MinValues == nil {
			continue
		}
		if n := OptionValues(options, r.Key); n < *r.MinValues {
			short = append(short, fmt.Sprintf("%s has %d of the %d values minValues asks for", r.Key, n, *r.MinValues))
		}
	}
	return strings.Join(short, "; ")
}

// OptionValues counts the distinct values of key over the options' nodes.
func OptionValues(options []Option, key string) int {
	values := map[string]bool{}
	for _, o := range options {
		for _, v := range []string{o.InstanceType.Labels[key], offeringValue(o, key)} {
			if v != "" {
				values[v] = true
			}
		}
	}
	return len(values)
}
