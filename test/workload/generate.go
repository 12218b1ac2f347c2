package workload

import (
	"math/rand/v2"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// MaxPods bounds the pods a scenario's workloads make, so that a seed runs in seconds.
const MaxPods = 40

// Generate returns the scenario of seed. It depends on nothing but the seed.
func Generate(seed uint64) *Scenario {
	r := rand.New(rand.NewPCG(seed, seed^0x7461696c6f72)) // "tailor"
	// Volumes draw from a stream of their own, so adding them left every other choice a seed
	// made as it was (a regression seed still holds the workload it was kept for).
	rv := rand.New(rand.NewPCG(seed, seed^0x766f6c756d6573)) // "volumes"
	s := &Scenario{Seed: seed, ScaleTo: map[string]int32{}}
	gpu := r.IntN(6) == 0
	s.NodeClasses = nodeClasses(r)
	var traits []poolTraits
	s.NodePools, traits = nodePools(r, s.NodeClasses, gpu)
	var priorities []string
	if r.IntN(2) == 0 {
		s.PriorityClasses = []*schedulingv1.PriorityClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "harness-high"}, Value: 1000},
			{ObjectMeta: metav1.ObjectMeta{Name: "harness-low"}, Value: -10, PreemptionPolicy: ptr.To(corev1.PreemptNever)},
		}
		priorities = []string{"harness-high", "harness-low"}
	}
	for i := range r.IntN(3) {
		s.DaemonSets = append(s.DaemonSets, daemonSet(r, appName("daemon", i)))
	}
	budget := 4 + r.IntN(MaxPods-3)
	for i := range 1 + r.IntN(8) {
		if budget <= 0 {
			break
		}
		replicas := int32(1 + r.IntN(min(8, budget)))
		budget -= int(replicas)
		// One GPU workload at most, small, in GPU scenarios.
		wantGPU := gpu && i == 0
		if wantGPU {
			replicas = min(replicas, 3)
		}
		switch k := r.IntN(10); {
		case k < 6:
			s.addDeployment(r, appName("web", i), replicas, podTemplate(r, appName("web", i), traits, wantGPU, priorities))
		case k < 8:
			name := appName("db", i)
			st := &appsv1.StatefulSet{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
				Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), ServiceName: name, PodManagementPolicy: appsv1.ParallelPodManagement,
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: name}}, Template: podTemplate(r, name, traits, wantGPU, priorities)},
			}
			s.addVolume(rv, st)
			s.StatefulSets = append(s.StatefulSets, st)
		default:
			name := appName("batch", i)
			tmpl := podTemplate(r, name, traits, wantGPU, priorities)
			tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
			// Longer than a node takes to come up in the sandbox, so that the pods of a Job run
			// side by side, as real ones do, and each needs the room it was planned.
			if tmpl.Annotations == nil {
				tmpl.Annotations = map[string]string{}
			}
			tmpl.Annotations[JobRuntimeAnnotation] = jobRuntime.String()
			s.Jobs = append(s.Jobs, &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
				Spec:       batchv1.JobSpec{Parallelism: ptr.To(replicas), Completions: ptr.To(replicas), Template: tmpl},
			})
		}
	}
	s.addFidelityShapes(rand.New(rand.NewPCG(seed, seed^0x666964656c697479))) // "fidelity"
	return s
}

// jobRuntime is how long a Job's pod runs in the sandbox, told to it through kwok's
// pod-complete annotation (sandbox.JobRuntimeAnnotation; not imported, to keep this package free
// of the sandbox's dependencies).
const (
	jobRuntime           = 20 * time.Second
	JobRuntimeAnnotation = "pod-complete.stage.kwok.x-k8s.io/delay"
)

// addDeployment adds a Deployment, sometimes with a PodDisruptionBudget, and the replicas it is
// cut to in the scale-down half.
func (s *Scenario) addDeployment(r *rand.Rand, name string, replicas int32, tmpl corev1.PodTemplateSpec) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: name}}
	s.Deployments = append(s.Deployments, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: sel, Template: tmpl},
	})
	s.ScaleTo[name] = int32(r.IntN(int(replicas)/2 + 1))
	if replicas < 2 || r.IntN(2) == 0 {
		return
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
	if r.IntN(2) == 0 {
		pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	} else {
		// At most what is left after the cut, so the cut itself never leaves the budget short.
		pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(max(1, s.ScaleTo[name])))
		if s.ScaleTo[name] == 0 {
			s.ScaleTo[name] = 1
		}
	}
	s.PDBs = append(s.PDBs, pdb)
}

// daemonSet is a small per-node agent, sometimes tolerating every taint, sometimes for one
// architecture only.
func daemonSet(r *rand.Rand, name string) *appsv1.DaemonSet {
	labels := map[string]string{AppLabel: name}
	spec := corev1.PodSpec{
		SchedulerName:                 SchedulerName,
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{container("agent", corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse([]string{"50m", "100m", "200m"}[r.IntN(3)]),
			corev1.ResourceMemory: resource.MustParse([]string{"64Mi", "128Mi", "256Mi"}[r.IntN(3)]),
		})},
	}
	if r.IntN(2) == 0 {
		spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	}
	if r.IntN(3) == 0 {
		spec.NodeSelector = map[string]string{corev1.LabelArchStable: "amd64"}
	}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}
}
