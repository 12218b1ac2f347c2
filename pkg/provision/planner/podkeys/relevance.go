package podkeys

import (
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The offerings a claim may still launch as differ only in their labels (instance type, zone,
// capacity type, ...) and their allocatable. The placement half of Filter (every plugin but
// NodeResourcesFit) reads labels and never allocatable, and reads only the label keys that a
// pod's own constraints, or constraints that count the pod, name. So for one pod the offerings
// fall into classes that agree on those keys, and placement needs asking once per class rather
// than once per offering. This file works out, from a pod's spec alone, which keys those are.
// It decides nothing about fit: it only says which offerings the plugins cannot tell apart.

// topologyTerm is a constraint some pod of the plan places over a topology key, counting the pods
// its selector matches: a DoNotSchedule spread constraint or a required (anti-)affinity term.
type topologyTerm struct {
	key      string
	selector labels.Selector
}

// Relevance knows the plan's topology terms, so that it can tell for each pod which keys the
// placement plugins may read when it, or any pod that counts it, is weighed.
type Relevance struct {
	terms []topologyTerm
	// profileKeys are keys the profile itself makes every pod read: NodeAffinity's addedAffinity
	// and DoNotSchedule default spread constraints.
	profileKeys    []string
	profileDefault []string
	// DeviceKeys are the keys DynamicResources reads for a pod that needs devices (the plan's
	// dra.Manager.NodeLabelKeys), and NeedsDevices tells such a pod (Planner.needsDevices); both
	// set before the first pod's keys are asked, when some pending pod needs devices.
	DeviceKeys   []string
	NeedsDevices func(*corev1.Pod) bool
	cache        map[*corev1.Pod]Keys
}

// Keys are the label keys placement may read for one pod. Topology are the keys whose value
// must be settled once the pod is on a claim: pods are counted per domain of these keys, by the
// pod's own constraints or by others', and a claim that may still launch in several domains would
// be counted in none. All means the pod reads more than this file can tell (volumes): every
// offering is then its own class. A pod that needs devices reads the keys DynamicResources
// reads (Relevance.DeviceKeys): the instance type, whose devices it weighs, and the keys of any
// node selector of the cluster's slices and allocated claims.
type Keys struct {
	Selector []string
	Topology []string
	All      bool
	// ByNode is set when the pod is counted by hostname (its spread, its terms, the profile's
	// default spread, or another pod's term that selects it), which topology leaves out, or
	// names its node (spec.nodeName, node affinity by metadata.name).
	ByNode bool
}

// New returns the relevance of label keys for the pods of podSets, under a profile whose own
// constraints read profileKeys (profileDefault by its default spread constraints).
func New(profileKeys, profileDefault []string, podSets ...[]*corev1.Pod) *Relevance {
	r := &Relevance{profileKeys: profileKeys, profileDefault: profileDefault, cache: map[*corev1.Pod]Keys{}}
	seen := map[string]bool{}
	add := func(key string, sel *metav1.LabelSelector) {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			s = labels.Everything() // counts more pods than the plugin would: only pins more
		}
		id := key + "\x00" + s.String()
		if !seen[id] {
			seen[id] = true
			r.terms = append(r.terms, topologyTerm{key: key, selector: s})
		}
	}
	for _, pods := range podSets {
		for _, p := range pods {
			for _, c := range p.Spec.TopologySpreadConstraints {
				if c.WhenUnsatisfiable == corev1.DoNotSchedule {
					add(c.TopologyKey, c.LabelSelector)
				}
			}
			for _, t := range requiredTerms(p) {
				add(t.TopologyKey, t.LabelSelector)
			}
		}
	}
	return r
}

// requiredTerms are the pod's required affinity and anti-affinity terms.
func requiredTerms(p *corev1.Pod) []corev1.PodAffinityTerm {
	a := p.Spec.Affinity
	if a == nil {
		return nil
	}
	var out []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		out = append(out, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
	}
	if a.PodAntiAffinity != nil {
		out = append(out, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
	}
	return out
}

func (r *Relevance) Keys(p *corev1.Pod) Keys {
	if k, ok := r.cache[p]; ok {
		return k
	}
	k := r.compute(p)
	r.cache[p] = k
	return k
}

func (r *Relevance) compute(p *corev1.Pod) Keys {
	// A pod that reads more than its spec tells is weighed per offering, but its topology keys
	// are settled all the same: a StatefulSet's replica with a volume still spreads over zones,
	// and a claim left free to launch in any zone counts it in none (four replicas of a zone
	// spread would be planned onto claims free in three zones, and all launch in one).
	all := slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil || v.Ephemeral != nil
	})
	sel := map[string]bool{}
	if r.NeedsDevices != nil && r.NeedsDevices(p) {
		for _, k := range r.DeviceKeys {
			sel[k] = true
		}
	}
	for k := range p.Spec.NodeSelector {
		sel[k] = true
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				sel[e.Key] = true
			}
		}
	}
	for _, k := range r.profileKeys {
		sel[k] = true
	}
	topo := map[string]bool{}
	spread := false
	for _, c := range p.Spec.TopologySpreadConstraints {
		spread = true
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			topo[c.TopologyKey] = true
		}
	}
	if !spread {
		for _, k := range r.profileDefault {
			topo[k] = true
		}
	}
	for _, t := range requiredTerms(p) {
		topo[t.TopologyKey] = true
	}
	podLabels := labels.Set(p.Labels)
	for _, t := range r.terms {
		if !topo[t.key] && t.selector.Matches(podLabels) {
			topo[t.key] = true
		}
	}
	// A claim's hostname is its own name whatever it launches as: never a reason to split.
	byNode := sel[corev1.LabelHostname] || topo[corev1.LabelHostname] || p.Spec.NodeName != "" || namesNodes(p)
	delete(sel, corev1.LabelHostname)
	delete(topo, corev1.LabelHostname)
	return Keys{Selector: SortedKeys(sel), Topology: SortedKeys(topo), All: all, ByNode: byNode}
}

// namesNodes reports whether the pod's node affinity, required or preferred (a shape of the pod
// may require what it prefers), picks nodes by field (metadata.name) rather than by label.
func namesNodes(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil {
		return false
	}
	if r := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; r != nil &&
		slices.ContainsFunc(r.NodeSelectorTerms, func(t corev1.NodeSelectorTerm) bool { return len(t.MatchFields) > 0 }) {
		return true
	}
	return slices.ContainsFunc(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		func(t corev1.PreferredSchedulingTerm) bool { return len(t.Preference.MatchFields) > 0 })
}

func SortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Signature names a set of keys, for caching the classes it makes.
func (k Keys) Signature() string {
	if k.All {
		return "\x00all"
	}
	return strings.Join(k.Selector, ",") + "|" + strings.Join(k.Topology, ",")
}

// ClassKey is what the offering's labels say for the keys, "" for a key it lacks.
func ClassKey(lbls map[string]string, keys ...[]string) string {
	var b strings.Builder
	for _, ks := range keys {
		for _, k := range ks {
			v, ok := lbls[k]
			if ok {
				b.WriteString(v)
			} else {
				b.WriteByte(0)
			}
			b.WriteByte(1)
		}
	}
	return b.String()
}

// Reads reports whether the pod's constraints name key.
func (k Keys) Reads(key string) bool {
	return slices.Contains(k.Selector, key) || slices.Contains(k.Topology, key)
}
