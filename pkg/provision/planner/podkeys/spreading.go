package podkeys

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Spreads reports whether the pod has DoNotSchedule topology spread constraints, its own or, when
// it has none, the profile's defaults (keys).
func Spreads(p *corev1.Pod, defaultKeys []string) bool {
	if len(p.Spec.TopologySpreadConstraints) == 0 {
		return len(defaultKeys) > 0
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	return false
}

// ReadBySpreaders returns whether a pending pod that spreads reads key: in its node selector or
// node affinity, required or preferred (a shape of the pod may require what it prefers), or as a
// topology key. A pod spreads when it has spread constraints, ScheduleAnyway ones included (the
// strictest shape of its preference ladder treats them as DoNotSchedule, and is shown the empty
// domains), or the profile's default ones apply to it. The empty domains carry values of those
// keys only, so that a pool with many free keys the pods ignore adds no more of them.
func ReadBySpreaders(pending []*corev1.Pod, rel *Relevance, defaultKeys []string) func(string) bool {
	read := map[string]bool{}
	for _, p := range pending {
		if len(p.Spec.TopologySpreadConstraints) == 0 && len(defaultKeys) == 0 {
			continue
		}
		k := rel.Keys(p)
		for _, key := range append(slices.Clone(k.Selector), k.Topology...) {
			read[key] = true
		}
		for _, c := range p.Spec.TopologySpreadConstraints {
			read[c.TopologyKey] = true
		}
		if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
			for _, t := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				for _, e := range t.Preference.MatchExpressions {
					read[e.Key] = true
				}
			}
		}
	}
	return func(key string) bool { return read[key] }
}

// CountsOthers reports whether the scheduler's answer for pod can change with pods and nodes
// placed after it: it spreads (DoNotSchedule, its own constraints or the profile's defaults) or
// has required pod affinity.
func CountsOthers(pod *corev1.Pod, defaultKeys []string) bool {
	if Spreads(pod, defaultKeys) {
		return true
	}
	a := pod.Spec.Affinity
	return a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

func SpreadKeysOfPods(pods []*corev1.Pod, defaultKeys []string) []string {
	keys := map[string]bool{}
	for _, p := range pods {
		if len(p.Spec.TopologySpreadConstraints) == 0 {
			for _, k := range defaultKeys {
				keys[k] = true
			}
		}
		for _, c := range p.Spec.TopologySpreadConstraints {
			if c.WhenUnsatisfiable == corev1.DoNotSchedule {
				keys[c.TopologyKey] = true
			}
		}
	}
	delete(keys, corev1.LabelHostname)
	return slices.Sorted(maps.Keys(keys))
}

// GroupOf returns spec, the key the pod shares with identical pods (specKey), or "" for a pod
// whose rejections may not last: one that spreads, with its own constraints or the profile's
// DoNotSchedule defaults (defaultKeys), or that requires pod affinity.
func GroupOf(p *corev1.Pod, spec string, defaultKeys []string) string {
	if CountsOthers(p, defaultKeys) {
		return ""
	}
	return spec
}

// SpecKey returns what identical pods share: everything a plugin can read of a pod before it is
// placed, that is its spec, its labels and namespace, which other pods' affinity terms and spread
// selectors select on, and its controller, whose selector PodTopologySpread's default constraints
// take. "" when the pod cannot be keyed.
func SpecKey(p *corev1.Pod) string { return keyOf(p, p.Spec) }

// CountingKey is SpecKey without what the pod requests: the pods it keys alike differ in their
// resources at most, so the plugins that count pods across nodes (simulation.PreFilterLike)
// answer them alike. "" when the pod cannot be keyed.
func CountingKey(p *corev1.Pod) string {
	// A shallow copy with the resources cleared: keyOf only reads it, so what the containers
	// share with the pod's is left as it is.
	spec := p.Spec
	spec.Resources, spec.Overhead = nil, nil
	spec.InitContainers, spec.Containers = withoutResources(spec.InitContainers), withoutResources(spec.Containers)
	if len(spec.EphemeralContainers) > 0 {
		spec.EphemeralContainers = slices.Clone(spec.EphemeralContainers)
		for i := range spec.EphemeralContainers {
			spec.EphemeralContainers[i].Resources = corev1.ResourceRequirements{}
		}
	}
	if key := keyOf(p, spec); key != "" {
		return "counting/" + key
	}
	return ""
}

// withoutResources is a copy of the containers with no resources.
func withoutResources(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return cs
	}
	out := slices.Clone(cs)
	for i := range out {
		out[i].Resources = corev1.ResourceRequirements{}
	}
	return out
}

// keyOf hashes the pod's namespace, labels and controller with spec in its protobuf encoding,
// which writes map entries in key order, so equal specs encode alike. A plan keys every pending
// pod, and this encoding costs a fraction of JSON's reflection.
func keyOf(p *corev1.Pod, spec corev1.PodSpec) string {
	data, err := spec.Marshal()
	if err != nil {
		return ""
	}
	var controller types.UID
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		controller = ref.UID
	}
	h := sha256.New()
	// Each string with its length first, so that no two sequences of strings write the same bytes.
	field := func(v string) {
		h.Write(binary.AppendUvarint(nil, uint64(len(v))))
		h.Write([]byte(v))
	}
	field(p.Namespace)
	field(strconv.Itoa(len(p.Labels)))
	for _, k := range slices.Sorted(maps.Keys(p.Labels)) {
		field(k)
		field(p.Labels[k])
	}
	field(string(controller))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}
