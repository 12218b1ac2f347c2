package schedperf

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// workload builds the pods of one scheduler_perf-style workload for one scheduler; phase labels
// them, so a phase's pods can be watched and deleted apart from the others.
type workload struct {
	name string
	pods func(schedulerName, phase string, n int) []*corev1.Pod
}

// schedulingBasic is scheduler_perf's SchedulingBasic: plain pods with small requests.
var schedulingBasic = workload{name: "SchedulingBasic", pods: func(schedulerName, phase string, n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = pod(schedulerName, phase, i, map[string]string{})
	}
	return out
}}

// spreadGroupSize is how many pods share one spread group in topologySpreadAntiAffinity: half of
// the 500 nodes, so that every group fits beside the others with room to choose.
const spreadGroupSize = 250

// topologySpreadAntiAffinity gives each group of spreadGroupSize pods a zone spread (maxSkew 1,
// DoNotSchedule) and a required anti-affinity on hostname against its own group: the two
// constraints of scheduler_perf's TopologySpreading and SchedulingPodAntiAffinity workloads,
// together, sized so that every pod fits on the existing nodes.
var topologySpreadAntiAffinity = workload{name: "TopologySpreadAntiAffinity", pods: func(schedulerName, phase string, n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		group := map[string]string{"group": fmt.Sprintf("%s-%d", phase, i/spreadGroupSize)}
		p := pod(schedulerName, phase, i, group)
		selector := &metav1.LabelSelector{MatchLabels: group}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selector,
		}}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: selector}},
		}}
		out[i] = p
	}
	return out
}}

// pod is scheduler_perf's default pod: one container requesting 100m CPU and 500Mi of memory.
func pod(schedulerName, phase string, i int, labels map[string]string) *corev1.Pod {
	labels["phase"] = phase
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", phase, i), Namespace: metav1.NamespaceDefault, Labels: labels},
		Spec: corev1.PodSpec{
			SchedulerName:                 schedulerName,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name:  "pause",
				Image: "pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("500Mi"),
				}},
			}},
		},
	}
}
