package charts

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"
)

// The chart with only the required settings: one object of each kind the issue asks for, shaped
// as it asks.
func TestDefaultValues(t *testing.T) {
	r := render(t, release{values: required})
	want := []string{
		"ClusterRole/tailor", "ClusterRoleBinding/tailor", "ClusterRoleBinding/tailor-kube-scheduler",
		"ClusterRoleBinding/tailor-volume-scheduler", "ConfigMap/tailor-config", "Deployment/tailor",
		"MutatingWebhookConfiguration/tailor", "PodDisruptionBudget/tailor", "Role/tailor",
		"RoleBinding/tailor", "RoleBinding/tailor-authentication-reader", "Service/tailor", "ServiceAccount/tailor",
	}
	if got := r.kinds(); !slices.Equal(got, want) {
		t.Fatalf("rendered objects:\n got %v\nwant %v", got, want)
	}

	dep := deployment(t, r)
	if *dep.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *dep.Spec.Replicas)
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	wantArgs := []string{
		"--config=/etc/tailor/config/scheduler-config.yaml",
		"--v=2",
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
		"--cloud=aws",
		"--cluster-name=prod-east",
		"--cluster-endpoint=https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
		"--webhook-port=9443",
		"--webhook-service=tailor",
		"--webhook-namespace=tailor",
		"--webhook-configuration=tailor",
		"--webhook-cert-secret=tailor-webhook-cert",
	}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args:\n got %q\nwant %q", c.Args, wantArgs)
	}
	// The image names no registry: users point image.repository at theirs.
	if c.Image != "tailor-scheduler:0.1.0" || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %s (%s), want tailor-scheduler:0.1.0 (IfNotPresent)", c.Image, c.ImagePullPolicy)
	}
	if pod.ServiceAccountName != "tailor" || pod.PriorityClassName != "system-cluster-critical" {
		t.Errorf("serviceAccountName %q priorityClassName %q", pod.ServiceAccountName, pod.PriorityClassName)
	}
	for _, probe := range []struct {
		name string
		p    *corev1.Probe
		path string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if probe.p == nil || probe.p.HTTPGet == nil || probe.p.HTTPGet.Path != probe.path ||
			probe.p.HTTPGet.Port.String() != "https-metrics" || probe.p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("%s probe %+v, want HTTPS GET %s on https-metrics", probe.name, probe.p, probe.path)
		}
	}
	if got := containerPorts(c); !reflect.DeepEqual(got, map[string]int32{"https-metrics": 10259, "https-webhook": 9443}) {
		t.Errorf("container ports %v", got)
	}
	wantResources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	if !reflect.DeepEqual(c.Resources, wantResources) {
		t.Errorf("resources %+v", c.Resources)
	}
	sc := c.SecurityContext
	if sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) || ptr.Deref(sc.RunAsUser, 0) != 65532 || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) ||
		ptr.Deref(sc.AllowPrivilegeEscalation, true) || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container securityContext %+v is not the restricted one", sc)
	}
	expectRestricted(t, dep)
	if !reflect.DeepEqual(pod.NodeSelector, map[string]string{"kubernetes.io/os": "linux"}) {
		t.Errorf("nodeSelector %v", pod.NodeSelector)
	}
	wantAffinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "karpenter.sh/nodepool", Operator: corev1.NodeSelectorOpDoesNotExist}}}},
	}}}
	if !reflect.DeepEqual(pod.Affinity, wantAffinity) {
		t.Errorf("affinity %+v, want off nodes with karpenter.sh/nodepool", pod.Affinity)
	}
	selector := &metav1.LabelSelector{MatchLabels: dep.Spec.Selector.MatchLabels}
	wantSpread := []corev1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selector},
		{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selector},
	}
	if !reflect.DeepEqual(pod.TopologySpreadConstraints, wantSpread) {
		t.Errorf("topologySpreadConstraints %+v", pod.TopologySpreadConstraints)
	}
	if !reflect.DeepEqual(pod.Tolerations, []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}}) {
		t.Errorf("tolerations %+v", pod.Tolerations)
	}
	// The configuration is mounted where --config reads it, and nothing else is.
	if len(pod.Volumes) != 1 || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != "tailor-config" ||
		len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/tailor/config" {
		t.Errorf("volumes %+v mounts %+v", pod.Volumes, c.VolumeMounts)
	}
	if dep.Spec.Template.Annotations["checksum/config"] == "" {
		t.Error("the pod template has no checksum/config annotation, so a config change would not roll the pods")
	}

	pdb := &policyv1.PodDisruptionBudget{}
	typed(t, r.find(t, "PodDisruptionBudget", "tailor"), pdb)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 ||
		!reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, dep.Spec.Template.Labels) {
		t.Errorf("PodDisruptionBudget %+v does not allow one of Tailor's pods down", pdb.Spec)
	}

	svc := &corev1.Service{}
	typed(t, r.find(t, "Service", "tailor"), svc)
	if got := servicePorts(svc); !reflect.DeepEqual(got, map[string]string{"https-metrics": "10259->https-metrics", "https-webhook": "443->https-webhook"}) {
		t.Errorf("service ports %v", got)
	}
	if !reflect.DeepEqual(svc.Spec.Selector, dep.Spec.Template.Labels) {
		t.Errorf("service selector %v does not select the pods %v", svc.Spec.Selector, dep.Spec.Template.Labels)
	}
	if sa := r.find(t, "ServiceAccount", "tailor"); len(sa.GetAnnotations()) > 0 {
		t.Errorf("ServiceAccount annotations %v, want none by default", sa.GetAnnotations())
	}

	hook := webhook(t, r)
	if hook.Name != "pods.scheduling.tailor.sh" || hook.ClientConfig.Service == nil ||
		!reflect.DeepEqual(*hook.ClientConfig.Service, admissionregistrationv1.ServiceReference{Namespace: "tailor", Name: "tailor", Path: ptr.To("/mutate-pods"), Port: ptr.To[int32](443)}) {
		t.Errorf("webhook %s calls %+v", hook.Name, hook.ClientConfig.Service)
	}
	wantRules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
	}}
	if !reflect.DeepEqual(hook.Rules, wantRules) {
		t.Errorf("webhook rules %+v", hook.Rules)
	}
	wantNamespaces := &metav1.LabelSelector{
		MatchLabels:      map[string]string{"scheduling.tailor.sh/enabled": "true"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "tailor"}}},
	}
	if !reflect.DeepEqual(hook.NamespaceSelector, wantNamespaces) {
		t.Errorf("webhook namespaceSelector %+v", hook.NamespaceSelector)
	}
	if hook.ObjectSelector != nil || *hook.FailurePolicy != admissionregistrationv1.Ignore || *hook.TimeoutSeconds != 3 ||
		*hook.SideEffects != admissionregistrationv1.SideEffectClassNone || !slices.Equal(hook.AdmissionReviewVersions, []string{"v1"}) ||
		*hook.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("webhook objectSelector %v failurePolicy %s timeout %d sideEffects %s reviews %v reinvocation %s", hook.ObjectSelector,
			*hook.FailurePolicy, *hook.TimeoutSeconds, *hook.SideEffects, hook.AdmissionReviewVersions, *hook.ReinvocationPolicy)
	}
	if r.find(t, "MutatingWebhookConfiguration", "tailor").GetAnnotations()["cert-manager.io/inject-ca-from"] != "" {
		t.Error("without cert-manager the webhook configuration must not ask cert-manager for a CA")
	}
	if !strings.Contains(r.notes, "kubectl label namespace NAME scheduling.tailor.sh/enabled=true") {
		t.Errorf("NOTES do not say how to opt a namespace in:\n%s", r.notes)
	}
}

func deployment(t *testing.T, r *rendered) *appsv1.Deployment {
	t.Helper()
	dep := &appsv1.Deployment{}
	typed(t, r.find(t, "Deployment", r.fullname()), dep)
	return dep
}

func webhook(t *testing.T, r *rendered) admissionregistrationv1.MutatingWebhook {
	t.Helper()
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	typed(t, r.find(t, "MutatingWebhookConfiguration", r.fullname()), cfg)
	if len(cfg.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(cfg.Webhooks))
	}
	return cfg.Webhooks[0]
}

func containerPorts(c corev1.Container) map[string]int32 {
	out := map[string]int32{}
	for _, p := range c.Ports {
		out[p.Name] = p.ContainerPort
	}
	return out
}

func servicePorts(svc *corev1.Service) map[string]string {
	out := map[string]string{}
	for _, p := range svc.Spec.Ports {
		out[p.Name] = fmt.Sprintf("%d->%s", p.Port, p.TargetPort.String())
	}
	return out
}

// expectRestricted runs the pod template through Pod Security Admission's own checks at the
// restricted level, the strictest Pod Security Standard.
func expectRestricted(t *testing.T, dep *appsv1.Deployment) {
	t.Helper()
	evaluator, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	results := evaluator.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()},
		&dep.Spec.Template.ObjectMeta, &dep.Spec.Template.Spec)
	if agg := psapolicy.AggregateCheckResults(results); !agg.Allowed {
		t.Errorf("the pod violates the restricted Pod Security Standard: %s", agg.ForbiddenDetail())
	}
}
