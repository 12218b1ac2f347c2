package aws

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// TestNodeClassNotReadyExplained: a class pinned to an AMI release that does not exist is not
// Ready; its NodePool says NodeClassReady=False and Ready=False with the class's reason; the pod
// it would serve gets one FailedProvisioning Event naming pool, class and reason however many
// plans run; nothing is launched, and the sandbox counts the cluster as settled. A class pinned to
// a release that exists is Ready.
func TestNodeClassNotReadyExplained(t *testing.T) {
	e := env.NewAWS(t)
	e.CreateClass(env.AWSClass("pinned-missing", "al2023@v20990101", nil))
	e.CreateClass(env.AWSClass("pinned-ok", "al2023@v20240625", nil))
	e.CreateNodePool(env.AWSPool("pinned", "pinned-missing"))
	e.CreateNodePool(env.AWSPool("pinned-ok", "pinned-ok"))
	pod := createPendingPod(e, "waits", "pinned")

	const alias = "spec.amiSelectorTerms[0].alias: al2023@v20990101 not found"
	waitPoolCondition(e, "pinned", metav1.ConditionFalse, "AMINotFound", alias)
	waitPoolCondition(e, "pinned-ok", metav1.ConditionTrue, "", "")
	told := func() []string {
		var out []string
		for _, ev := range e.EventsFor("FailedProvisioning", "Pod") {
			if ev.Regarding.Name == pod.Name && strings.Contains(ev.Note, `NodePool "pinned" (`) {
				out = append(out, ev.Note)
			}
		}
		return out
	}
	e.WaitFor("the pod to be told why", 30*time.Second, func() (bool, string) {
		notes := told()
		return len(notes) == 1 && strings.Contains(notes[0], `NodePool "pinned"`) && strings.Contains(notes[0], `EC2NodeClass "pinned-missing"`) &&
			strings.Contains(notes[0], "AMINotFound") && strings.Contains(notes[0], alias), fmt.Sprint(notes)
	})
	nudge(e, pod, 8)
	if n := testutil.ToFloat64(metrics.PodsToldUnavailable.WithLabelValues("pinned", "AMINotFound")); n != 1 {
		t.Errorf("the pod was told %v times that NodePool pinned cannot launch, want once", n)
	}
	if notes := told(); len(notes) != 1 {
		t.Errorf("FailedProvisioning Events for the pod: %q, want the one", notes)
	}
	list, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims := list.Items
	if len(claims) != 0 || e.Emu.Calls("CreateFleet") != 0 {
		t.Errorf("%d NodeClaims and %d CreateFleet calls for a NodePool whose class is not ready", len(claims), e.Emu.Calls("CreateFleet"))
	}
	state, err := e.Cluster.Read(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !state.Settled() {
		t.Errorf("the sandbox would not settle: explained %v", state.Explained)
	}
}

// TestAWSKarpenterAL2023UserDataLaunches: Karpenter's AL2023 example user data (MIME, boundary
// "//", a NodeConfig and a shell part, no closing "--") launches, and the node joins.
func TestAWSKarpenterAL2023UserDataLaunches(t *testing.T) {
	e := env.NewAWS(t)
	ud := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n" +
		"--//\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n" +
		"  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n\n" +
		"--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho \"Hello from AL2023\"\n--//\n"
	e.CreateClass(env.AWSClass("al2023-custom", "al2023@latest", &ud))
	e.CreateNodePool(env.AWSPool("custom", "al2023-custom"))
	createPendingPod(e, "custom-ud", "custom")
	e.WaitRunning("app=custom-ud", 1, time.Minute)
	if n := len(e.EventsFor("LaunchFailed", "NodeClaim")); n != 0 {
		t.Errorf("%d launch failures before the node joined", n)
	}
}

// TestPermanentLaunchErrorBacksOff: with CreateFleet denied (the controller's role lacks the
// permission), the first launch fails, the pod is told EC2's error once, and the NodePool is
// held back 30 s, then 60 s: no NodeClaim is recreated in between, however often the pod is
// looked at. Once the permission is back and the hold is over, the pod runs.
func TestPermanentLaunchErrorBacksOff(t *testing.T) {
	e := env.NewAWS(t)
	e.Emu.Deny("CreateFleet")
	e.CreateClass(env.AWSClass("denied", "al2023@latest", nil))
	e.CreateNodePool(env.AWSPool("denied", "denied"))
	pod := createPendingPod(e, "denied", "denied")
	// Metrics are process-wide: count from what earlier tests (or -count runs) left.
	before := testutil.ToFloat64(metrics.NodeClaimsCreated.WithLabelValues("denied", "provisioning"))
	toldBefore := testutil.ToFloat64(metrics.PodsToldUnavailable.WithLabelValues("denied", "LaunchFailed"))
	created := func() float64 {
		return testutil.ToFloat64(metrics.NodeClaimsCreated.WithLabelValues("denied", "provisioning")) - before
	}
	e.WaitFor("the pod to be told EC2's error", 30*time.Second, func() (bool, string) {
		for _, ev := range e.EventsFor("FailedProvisioning", "Pod") {
			if ev.Regarding.Name == pod.Name && strings.Contains(ev.Note, `NodePool "denied"`) && strings.Contains(ev.Note, "UnauthorizedOperation") &&
				strings.Contains(ev.Note, "not authorized") {
				return true, ev.Note
			}
		}
		return false, fmt.Sprint(env.Notes(e.EventsFor("FailedProvisioning", "Pod")))
	})
	expect := func(when string, fleets int) {
		t.Helper()
		nudge(e, pod, 6)
		if got := e.Emu.Calls("CreateFleet"); got != fleets || created() != float64(fleets) {
			t.Fatalf("%s: %d CreateFleet calls and %v NodeClaims created, want %d", when, got, created(), fleets)
		}
	}
	expect("held back after the first failure", 1)
	e.Clock.Step(31 * time.Second)
	e.WaitFor("one more launch once the 30 s hold ended", 20*time.Second, func() (bool, string) {
		nudge(e, pod, 1)
		return e.Emu.Calls("CreateFleet") == 2, fmt.Sprintf("%d CreateFleet calls", e.Emu.Calls("CreateFleet"))
	})
	expect("held back after the second failure", 2)
	e.Clock.Step(31 * time.Second)
	expect("still held back: the second hold is 60 s", 2)
	if n := testutil.ToFloat64(metrics.PodsToldUnavailable.WithLabelValues("denied", "LaunchFailed")) - toldBefore; n != 1 {
		t.Errorf("the pod was told %v times of the same failure, want once", n)
	}
	e.Emu.Allow("CreateFleet")
	e.Clock.Step(30 * time.Second)
	nudge(e, pod, 1)
	e.WaitRunning("app=denied", 1, time.Minute)
}

// createPendingPod makes a small pod labelled app=name that only the pool may serve.
func createPendingPod(e *env.AWS, name, pool string) *corev1.Pod {
	e.T.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: env.PodSpec("100m", "128Mi")}
	pod.Spec.NodeSelector = map[string]string{karpv1.NodePoolLabelKey: pool}
	out, err := e.Cluster.Kube.CoreV1().Pods("default").Create(e.Ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.T.Fatalf("creating pod %s: %v", name, err)
	}
	return out
}

// nudge changes the pod n times, 250 ms apart: each change asks the provisioner for a plan, as
// the scheduler's own status writes and the 10 s resync do.
func nudge(e *env.AWS, pod *corev1.Pod, n int) {
	e.T.Helper()
	for i := range n {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e/nudge":"%d-%d"}}}`, time.Now().UnixNano(), i)
		if _, err := e.Cluster.Kube.CoreV1().Pods(pod.Namespace).Patch(e.Ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			e.T.Fatalf("nudging pod %s: %v", pod.Name, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitPoolCondition waits until the pool's NodeClassReady and Ready have the status, reason and
// a message holding message.
func waitPoolCondition(e *env.AWS, name string, status metav1.ConditionStatus, reason, message string) {
	e.T.Helper()
	e.WaitFor(fmt.Sprintf("NodePool %s NodeClassReady and Ready %s %s", name, status, reason), time.Minute, func() (bool, string) {
		np, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, t := range []string{karpv1.ConditionTypeNodeClassReady, karpv1.ConditionTypeReady} {
			c := np.GetCondition(t)
			if c == nil || c.Status != status || (reason != "" && c.Reason != reason) || !strings.Contains(c.Message, message) {
				return false, fmt.Sprintf("%+v", np.Status.Conditions)
			}
		}
		return true, ""
	})
}
