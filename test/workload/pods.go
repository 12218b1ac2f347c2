package workload

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// AppLabel names the workload a pod belongs to; selectors, spread and affinity use it.
const AppLabel = "app"

// podTemplate draws the pod template of workload app: requests, containers, placement rules.
// traits lets some workloads aim at a particular pool (its team label, its taint, its GPUs).
func podTemplate(r *rand.Rand, app string, traits []poolTraits, gpu bool, priorities []string) corev1.PodTemplateSpec {
	labels := map[string]string{AppLabel: app}
	spec := corev1.PodSpec{
		SchedulerName:                 SchedulerName,
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers:                    []corev1.Container{container("main", requests(r, gpu))},
	}
	if r.IntN(4) == 0 {
		// An init container bigger than the main one: the pod's effective request is the max.
		init := container("init", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse([]string{"1", "2"}[r.IntN(2)])})
		spec.InitContainers = append(spec.InitContainers, init)
	}
	if r.IntN(4) == 0 {
		// A sidecar (restartable init container) adds to the pod's request for its whole life.
		side := container("sidecar", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")})
		side.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		spec.InitContainers = append(spec.InitContainers, side)
	}
	if r.IntN(6) == 0 {
		spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
	}
	if len(priorities) > 0 && r.IntN(3) == 0 {
		spec.PriorityClassName = priorities[r.IntN(len(priorities))]
	}
	aim(r, &spec, traits)
	spec.TopologySpreadConstraints = spread(r, labels)
	spec.Affinity = podAffinity(r, labels, spec.Affinity)
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}
}

func container(name string, req corev1.ResourceList) corev1.Container {
	c := corev1.Container{Name: name, Image: "pause:3.10", Resources: corev1.ResourceRequirements{Requests: req}}
	// Extended resources must be limited as much as requested.
	if gpu, ok := req[fake.ResourceNvidiaGPU]; ok {
		c.Resources.Limits = corev1.ResourceList{fake.ResourceNvidiaGPU: gpu}
	}
	return c
}

func requests(r *rand.Rand, gpu bool) corev1.ResourceList {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse([]string{"100m", "250m", "500m", "750m", "1", "1500m", "2", "3"}[r.IntN(8)]),
		corev1.ResourceMemory: resource.MustParse([]string{"128Mi", "512Mi", "1Gi", "2Gi", "3Gi", "6Gi"}[r.IntN(6)]),
	}
	if r.IntN(4) == 0 {
		rl[corev1.ResourceEphemeralStorage] = resource.MustParse([]string{"1Gi", "4Gi", "10Gi"}[r.IntN(3)])
	}
	if gpu {
		rl[fake.ResourceNvidiaGPU] = resource.MustParse("1")
	}
	return rl
}

// aim adds node selection: a pool's team label, a toleration of a tainted pool's taint, an
// architecture, a capacity type, or zones, each sometimes; most pods stay free to land anywhere.
func aim(r *rand.Rand, spec *corev1.PodSpec, traits []poolTraits) {
	sel := map[string]string{}
	t := traits[r.IntN(len(traits))]
	if t.team != "" && r.IntN(3) == 0 {
		sel[TeamLabel] = t.team
	}
	if t.tainted && r.IntN(2) == 0 {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: PoolTaintKey, Operator: corev1.TolerationOpEqual, Value: t.name, Effect: corev1.TaintEffectNoSchedule})
	}
	switch r.IntN(8) {
	case 0:
		sel[corev1.LabelArchStable] = []string{"amd64", "arm64"}[r.IntN(2)]
	case 1:
		sel[karpv1.CapacityTypeLabelKey] = []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot}[r.IntN(2)]
	}
	if len(sel) > 0 {
		spec.NodeSelector = sel
	}
	switch r.IntN(6) {
	case 0:
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: pick(r, fake.Zones(), 1)}}}}}}}
	case 1:
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeSpot}}}}}}}}
	}
}

// spread adds a topology spread constraint over zone, hostname or capacity type, with either
// whenUnsatisfiable and sometimes minDomains, to about half the workloads.
func spread(r *rand.Rand, labels map[string]string) []corev1.TopologySpreadConstraint {
	if r.IntN(2) == 0 {
		return nil
	}
	c := corev1.TopologySpreadConstraint{
		MaxSkew:           int32(1 + r.IntN(2)),
		TopologyKey:       []string{corev1.LabelTopologyZone, corev1.LabelTopologyZone, corev1.LabelHostname, karpv1.CapacityTypeLabelKey}[r.IntN(4)],
		WhenUnsatisfiable: []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}[r.IntN(2)],
		LabelSelector:     &metav1.LabelSelector{MatchLabels: labels},
	}
	if c.WhenUnsatisfiable == corev1.DoNotSchedule && r.IntN(3) == 0 {
		c.MinDomains = ptr.To(int32(2 + r.IntN(2)))
	}
	return []corev1.TopologySpreadConstraint{c}
}

// podAffinity adds, sometimes, required or preferred pod anti-affinity to the workload itself
// (one per node, or spread over zones), or required zone affinity to itself (all in one zone).
func podAffinity(r *rand.Rand, labels map[string]string, a *corev1.Affinity) *corev1.Affinity {
	term := func(key string) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: key}
	}
	if a == nil {
		a = &corev1.Affinity{}
	}
	switch r.IntN(8) {
	case 0:
		a.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(corev1.LabelHostname)}}
	case 1:
		a.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term(corev1.LabelTopologyZone)}}}
	case 2:
		a.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(corev1.LabelTopologyZone)}}
	case 3:
		a.PodAffinity = &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term(corev1.LabelHostname)}}}
	}
	if a.NodeAffinity == nil && a.PodAffinity == nil && a.PodAntiAffinity == nil {
		return nil
	}
	return a
}

// appName is the name of the i-th workload of a kind.
func appName(kind string, i int) string { return fmt.Sprintf("%s-%d", kind, i) }
