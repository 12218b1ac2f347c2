package workload

import (
	"fmt"
	"math/rand/v2"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// RackLabel is a custom topology key whose values only NodePools define: some pools require it
// In a few values of their own, so its domains exist only as values a pool can create, as in
// Karpenter's recipe for a ratio of spot to on-demand nodes.
const RackLabel = "harness.tailor.sh/rack"

// addFidelityShapes adds the shapes where an autoscaler's semantics, not the scheduler's, decide
// the answer: spread over domains only NodePools define, a pool held to a zone by a template
// label, several weighted preferences, and scale-downs that leave a spread tight. It draws from
// its own stream, after every other draw, so every other choice a seed made is as it was. Each
// shape is added to about one seed in four, within MaxPods.
func (s *Scenario) addFidelityShapes(r *rand.Rand) {
	budget := MaxPods - s.Pods()
	if len(s.NodePools) >= 2 && r.IntN(4) == 0 && budget >= 4 {
		budget -= s.addRackSpread(r, min(budget, 8))
	}
	if r.IntN(4) == 0 {
		holdToZone(r, s.NodePools[r.IntN(len(s.NodePools))])
	}
	if r.IntN(4) == 0 && budget >= 2 {
		s.addWeightedPreferences(r, min(budget, 4))
	}
	// Pods of different sizes that exclude each other are not drawn: the planner orders them
	// largest first within one plan, and a live run that creates them in several batches can
	// place the small one first (harness seed 1 then cost 1.41 x its offline plan in one make test
	// of three). TestPodsThatExcludeEachOtherLargestFirst covers the shape in one batch.
}

// addRackSpread gives two or more pools disjoint values of RackLabel and adds a Deployment spread
// over it with maxSkew 1, cut to one replica fewer in the scale-down half so that the spread stays
// tight. It returns the pods it added.
func (s *Scenario) addRackSpread(r *rand.Rand, most int) int {
	pools := slices.Clone(s.NodePools)
	r.Shuffle(len(pools), func(i, j int) { pools[i], pools[j] = pools[j], pools[i] })
	pools = pools[:2+r.IntN(len(pools)-1)]
	next := 1
	for _, np := range pools {
		var values []string
		for range 1 + r.IntN(3) {
			values = append(values, fmt.Sprint(next))
			next++
		}
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
			Key: RackLabel, Operator: corev1.NodeSelectorOpIn, Values: values})
	}
	name := "rack-spread"
	labels := map[string]string{AppLabel: name}
	c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: RackLabel, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}
	if r.IntN(2) == 0 {
		c.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
	}
	spec := smallPodSpec(r)
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c}
	// The pods tolerate every pool's taint half the time: with Honor, the tainted pools' racks
	// are then domains too.
	if r.IntN(2) == 0 {
		spec.Tolerations = []corev1.Toleration{{Key: PoolTaintKey, Operator: corev1.TolerationOpExists}}
	}
	replicas := int32(4 + r.IntN(most-3))
	s.addFixedDeployment(name, replicas, max(1, replicas-1), corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec})
	return int(replicas)
}

// holdToZone sets a NodePool's template label topology.kubernetes.io/zone, which Karpenter reads
// as a requirement; the zone is one the pool's own zone requirement allows, so that the pool is
// valid.
func holdToZone(r *rand.Rand, np *karpv1.NodePool) {
	zones := fake.Zones()
	for _, req := range np.Spec.Template.Spec.Requirements {
		if req.Key == corev1.LabelTopologyZone && req.Operator == corev1.NodeSelectorOpIn {
			zones = req.Values
		}
	}
	np.Spec.Template.Labels[corev1.LabelTopologyZone] = zones[r.IntN(len(zones))]
}

// addWeightedPreferences adds a Deployment with two or three preferred node-affinity terms of
// distinct weights over zone, capacity type and category, some of which no pool may meet.
func (s *Scenario) addWeightedPreferences(r *rand.Rand, most int) int {
	name := "preferences"
	spec := smallPodSpec(r)
	terms := []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: pick(r, fake.Zones(), 1)},
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{[]string{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand}[r.IntN(2)]}},
		{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{[]string{"c", "m", "r", "x"}[r.IntN(4)]}},
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"nowhere-1a"}},
	}
	r.Shuffle(len(terms), func(i, j int) { terms[i], terms[j] = terms[j], terms[i] })
	weights := []int32{100, 50, 10, 1}
	var preferred []corev1.PreferredSchedulingTerm
	for i := range 2 + r.IntN(2) {
		preferred = append(preferred, corev1.PreferredSchedulingTerm{Weight: weights[i],
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{terms[i]}}})
	}
	spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}}
	replicas := int32(1 + r.IntN(most))
	s.addFixedDeployment(name, replicas, replicas, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{AppLabel: name}}, Spec: spec})
	return int(replicas)
}

// smallPodSpec is a pod of a quarter to one CPU that may land anywhere untainted.
func smallPodSpec(r *rand.Rand) corev1.PodSpec {
	return corev1.PodSpec{
		SchedulerName:                 SchedulerName,
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{container("main", corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse([]string{"250m", "500m", "1"}[r.IntN(3)]),
			corev1.ResourceMemory: resource.MustParse([]string{"256Mi", "1Gi", "2Gi"}[r.IntN(3)]),
		})},
	}
}

// addFixedDeployment adds a Deployment of replicas pods, cut to scaleTo in the scale-down half,
// without a PodDisruptionBudget.
func (s *Scenario) addFixedDeployment(name string, replicas, scaleTo int32, tmpl corev1.PodTemplateSpec) {
	s.Deployments = append(s.Deployments, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Template: tmpl,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: name}}},
	})
	s.ScaleTo[name] = scaleTo
}
