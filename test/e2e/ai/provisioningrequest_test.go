package ai

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1 "github.com/tailor-sh/tailor/pkg/apis/autoscaling/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provreq"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// A ProvisioningRequest as Kueue's provisioning admission check creates it: a PodTemplate of the
// job's pods and a request for 4 of them, best-effort atomic. Tailor launches nodes for all of
// them and says Provisioned once they are Ready; the capacity stays booked while the nodes are
// empty, past consolidateAfter; then the job's pods, annotated to consume the request, all bind
// to that capacity with nothing more launched. Past the booking time the request says so.
func TestProvisioningRequestAsKueueCreatesIt(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	waitPoolReady(e, "default")
	createPodTemplate(e, "ppt-train", env.PodSpec("2", "4Gi"))
	createProvisioningRequest(e, "train", autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp, "ppt-train", 4)

	req := waitProvisioningRequest(e, "train", autoscalingv1.Provisioned, metav1.ConditionTrue, 2*time.Minute)
	expectProvReqCondition(t, req, autoscalingv1.Accepted, metav1.ConditionTrue, provreq.ReasonAccepted)
	expectProvReqCondition(t, req, autoscalingv1.Provisioned, metav1.ConditionTrue, provreq.ReasonCapacityIsProvisioned)
	launched := claimNames(e)
	if len(launched) == 0 {
		t.Fatal("Provisioned with no NodeClaim launched")
	}
	for name, c := range launched {
		if c.Annotations[provreq.RequestAnnotationKey] != "default/train" || !c.IsTrue(karpv1.ConditionTypeInitialized) {
			t.Fatalf("NodeClaim %s: annotations %v, initialized %v", name, c.Annotations, c.IsTrue(karpv1.ConditionTypeInitialized))
		}
	}

	// The nodes are empty until the job is admitted: booked, they are not consolidated away.
	e.Clock.Step(2 * time.Minute)
	time.Sleep(5 * time.Second)
	if now := claimNames(e); len(now) != len(launched) {
		t.Fatalf("booked capacity went away while empty: %d NodeClaims, had %d", len(now), len(launched))
	}

	for i := range 4 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("train-%d", i), Namespace: "default",
			Labels: map[string]string{"job": "train"},
			Annotations: map[string]string{autoscalingv1.ConsumeAnnotationKey: "train",
				autoscalingv1.ClassAnnotationKey: autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp}},
			Spec: env.PodSpec("2", "4Gi")}
		if _, err := e.Cluster.Kube.CoreV1().Pods("default").Create(e.Ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods := e.WaitRunning("job=train", 4, time.Minute)
	nodes := map[string]bool{}
	for _, c := range launched {
		nodes[c.Status.NodeName] = true
	}
	for _, p := range pods {
		if !nodes[p.Spec.NodeName] {
			t.Errorf("pod %s runs on %s, not on a node launched for the request", p.Name, p.Spec.NodeName)
		}
	}
	if now := claimNames(e); len(now) != len(launched) {
		t.Fatalf("%d NodeClaims after the pods bound, %d launched for the request: the pods launched more", len(now), len(launched))
	}

	e.Clock.Step(provreq.DefaultBookingTime)
	touchProvisioningRequest(e, "train")
	req = waitProvisioningRequest(e, "train", autoscalingv1.BookingExpired, metav1.ConditionTrue, 30*time.Second)
	expectProvReqCondition(t, req, autoscalingv1.BookingExpired, metav1.ConditionTrue, provreq.ReasonReservationTimeExpired)
}

// An atomic request applied before any NodePool (a user applying their manifests in one go)
// waits for one, saying so, and is met once the NodePool comes: no NodePool yet is no reason to
// fail it for good.
func TestAtomicProvisioningRequestWaitsForItsNodePool(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	createPodTemplate(e, "ppt-early", env.PodSpec("1", "1Gi"))
	createProvisioningRequest(e, "early", autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp, "ppt-early", 2)
	req := waitProvisioningRequest(e, "early", autoscalingv1.Provisioned, metav1.ConditionFalse, time.Minute)
	if msg := meta.FindStatusCondition(req.Status.Conditions, autoscalingv1.Provisioned).Message; !strings.Contains(msg, "no NodePool exists yet") {
		t.Errorf("Provisioned=False says %q; want that there is no NodePool yet", msg)
	}
	if failed := meta.FindStatusCondition(req.Status.Conditions, autoscalingv1.Failed); failed != nil && failed.Status == metav1.ConditionTrue {
		t.Fatalf("the request failed for good before its NodePool came: %s", failed.Message)
	}
	e.ApplyExample("nodepool.yaml")
	req = waitProvisioningRequest(e, "early", autoscalingv1.Provisioned, metav1.ConditionTrue, 2*time.Minute)
	expectProvReqCondition(t, req, autoscalingv1.Provisioned, metav1.ConditionTrue, provreq.ReasonCapacityIsProvisioned)
}

// check-capacity launches nothing: a request whose pods fit the node there is becomes Provisioned,
// one whose pods fit nowhere says why, and neither launches a node.
func TestProvisioningRequestCheckCapacity(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("web", 1, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=web", 1, 2*time.Minute)
	before := claimNames(e)

	createPodTemplate(e, "small", env.PodSpec("100m", "128Mi"))
	createProvisioningRequest(e, "fits", autoscalingv1.ProvisioningClassCheckCapacity, "small", 2)
	req := waitProvisioningRequest(e, "fits", autoscalingv1.Provisioned, metav1.ConditionTrue, time.Minute)
	expectProvReqCondition(t, req, autoscalingv1.Provisioned, metav1.ConditionTrue, provreq.ReasonCapacityIsFound)

	createPodTemplate(e, "big", env.PodSpec("64", "16Gi"))
	createProvisioningRequest(e, "too-big", autoscalingv1.ProvisioningClassCheckCapacity, "big", 2)
	req = waitProvisioningRequest(e, "too-big", autoscalingv1.Provisioned, metav1.ConditionFalse, time.Minute)
	expectProvReqCondition(t, req, autoscalingv1.Provisioned, metav1.ConditionFalse, provreq.ReasonCapacityIsNotFound)
	if msg := meta.FindStatusCondition(req.Status.Conditions, autoscalingv1.Provisioned).Message; !strings.Contains(msg, "2 of 2 pods fit no node") {
		t.Errorf("Provisioned=False says %q; want how many pods fit nowhere", msg)
	}
	if after := claimNames(e); len(after) != len(before) {
		t.Fatalf("check-capacity launched: %d NodeClaims, had %d", len(after), len(before))
	}
}

// An atomic request that cannot be met in full (its NodePool's limit holds two of its four pods)
// launches nothing and is Failed, saying why; one that names a PodTemplate that does not exist is
// Failed naming the field.
func TestImpossibleAtomicProvisioningRequestLaunchesNothing(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	np := env.NodePool("limited")
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("16")}
	e.CreateNodePool(np)
	waitPoolReady(e, "limited")
	createPodTemplate(e, "ppt-wide", env.PodSpec("6", "4Gi"))
	createProvisioningRequest(e, "wide", autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp, "ppt-wide", 4)
	req := waitProvisioningRequest(e, "wide", autoscalingv1.Failed, metav1.ConditionTrue, time.Minute)
	expectProvReqCondition(t, req, autoscalingv1.Failed, metav1.ConditionTrue, provreq.ReasonCapacityIsNotFound)
	if msg := meta.FindStatusCondition(req.Status.Conditions, autoscalingv1.Failed).Message; !strings.Contains(msg, `NodePool "limited"`) {
		t.Errorf("Failed says %q; want the NodePool's reason", msg)
	}

	createProvisioningRequest(e, "typo", autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp, "ppt-missing", 1)
	req = waitProvisioningRequest(e, "typo", autoscalingv1.Failed, metav1.ConditionTrue, time.Minute)
	expectProvReqCondition(t, req, autoscalingv1.Failed, metav1.ConditionTrue, provreq.ReasonFailedToCreatePods)
	if msg := meta.FindStatusCondition(req.Status.Conditions, autoscalingv1.Failed).Message; !strings.Contains(msg, "spec.podSets[0].podTemplateRef.name") {
		t.Errorf("Failed says %q; want the field", msg)
	}
	time.Sleep(3 * time.Second) // a launch would have been created at once
	if claims := claimNames(e); len(claims) != 0 {
		t.Fatalf("%d NodeClaims launched for requests that cannot be met", len(claims))
	}
}

// waitPoolReady waits until Tailor has said the NodePool is Ready, which it does from the same
// NodePool informer the ProvisioningRequest controller plans with. An atomic request that is planned
// before that informer has the pool is Failed for good, with "no NodePool is ready": a request
// created a few milliseconds after its pool lost that race on a loaded machine.
func waitPoolReady(e *env.Env, name string) {
	e.T.Helper()
	e.WaitFor(fmt.Sprintf("NodePool %s Ready", name), time.Minute, func() (bool, string) {
		np, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return np.IsTrue(karpv1.ConditionTypeReady), fmt.Sprintf("%+v", np.Status.Conditions)
	})
}

func createPodTemplate(e *env.Env, name string, spec corev1.PodSpec) {
	e.T.Helper()
	tmpl := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"template": name}}, Spec: spec}}
	if _, err := e.Cluster.Kube.CoreV1().PodTemplates("default").Create(e.Ctx, tmpl, metav1.CreateOptions{}); err != nil {
		e.T.Fatalf("creating PodTemplate %s: %v", name, err)
	}
}

func createProvisioningRequest(e *env.Env, name, class, template string, count int32) {
	e.T.Helper()
	req := &autoscalingv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: autoscalingv1.ProvisioningRequestSpec{ProvisioningClassName: class,
			PodSets: []autoscalingv1.PodSet{{PodTemplateRef: autoscalingv1.Reference{Name: template}, Count: count}}}}
	if _, err := e.Cluster.Tailor.AutoscalingV1().ProvisioningRequests("default").Create(e.Ctx, req, metav1.CreateOptions{}); err != nil {
		e.T.Fatalf("creating ProvisioningRequest %s: %v", name, err)
	}
}

// touchProvisioningRequest changes a label, so the controller looks at the request now rather
// than when its requeue (on the real clock) comes.
func touchProvisioningRequest(e *env.Env, name string) {
	e.T.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{"touched":"%d"}}}`, time.Now().UnixNano())
	if _, err := e.Cluster.Tailor.AutoscalingV1().ProvisioningRequests("default").Patch(e.Ctx, name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

func waitProvisioningRequest(e *env.Env, name, typ string, status metav1.ConditionStatus, timeout time.Duration) *autoscalingv1.ProvisioningRequest {
	e.T.Helper()
	var req *autoscalingv1.ProvisioningRequest
	e.WaitFor(fmt.Sprintf("ProvisioningRequest %s %s=%s", name, typ, status), timeout, func() (bool, string) {
		var err error
		if req, err = e.Cluster.Tailor.AutoscalingV1().ProvisioningRequests("default").Get(e.Ctx, name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(req.Status.Conditions, typ)
		return c != nil && c.Status == status, fmt.Sprintf("conditions %+v", req.Status.Conditions)
	})
	return req
}

func expectProvReqCondition(t *testing.T, req *autoscalingv1.ProvisioningRequest, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(req.Status.Conditions, typ)
	if c == nil || c.Status != status || c.Reason != reason {
		t.Fatalf("ProvisioningRequest %s: %s is %+v, want %s with reason %s", req.Name, typ, c, status, reason)
	}
}

// claimNames returns the live NodeClaims by name.
func claimNames(e *env.Env) map[string]karpv1.NodeClaim {
	e.T.Helper()
	list, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[string]karpv1.NodeClaim{}
	for _, c := range list.Items {
		if c.DeletionTimestamp == nil {
			out[c.Name] = c
		}
	}
	return out
}
