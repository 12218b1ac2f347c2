package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/lifecycle"
	"github.com/tailor-sh/tailor/pkg/lifecycle/gc"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// Tailor crashes after the cloud launched an instance and before the NodeClaim's status says so.
// The restarted Tailor launches the same claim again, and the idempotency token gives it the same
// instance: exactly one instance, and the pod runs on it. One replica: two replicas of 1 CPU
// created more than a batch's idle window apart (a loaded CI machine) were planned in two
// batches onto two claims, and the restart raced the second claim's create, which the API server
// finished after its client had given up.
func TestCrashBetweenLaunchAndStatusWriteLeavesOneInstance(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	e.Cloud.InjectFault(fake.StepAfterLaunch, fake.Fault{Hang: true})
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("web", 1, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the launch to hang after the instance exists", time.Minute, func() (bool, string) {
		return len(e.Cloud.Instances()) == 1, fmt.Sprintf("%d instances", len(e.Cloud.Instances()))
	})
	list, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims := list.Items
	if len(claims) != 1 || claims[0].Status.ProviderID != "" {
		t.Fatalf("want one NodeClaim that does not know its instance yet, got %d (%+v)", len(claims), claims)
	}
	if err := e.Cluster.RestartScheduler(e.Ctx); err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=web", 1, 2*time.Minute)
	if n := len(e.Cloud.Instances()); n != 1 {
		t.Fatalf("%d instances after the restart; want exactly 1", n)
	}
	list, err = e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims = list.Items
	if len(claims) != 1 || claims[0].Status.ProviderID != e.Cloud.Instances()[0].ProviderID {
		t.Fatalf("want the one NodeClaim to own the one instance; got %d claims", len(claims))
	}
}

// An instance with Tailor's tags and no NodeClaim (a launch by a Tailor that then lost its
// claim) is terminated once it is older than the grace period, and its node removed.
func TestOrphanInstanceIsCollected(t *testing.T) {
	e := env.New(t)
	orphan := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", UID: types.UID("orphan-uid"), Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		}},
	}
	launched, err := e.Cloud.Create(context.Background(), orphan)
	if err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the orphan's node to register", time.Minute, func() (bool, string) {
		_, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, "orphan", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	time.Sleep(2 * gc.Interval) // young orphans are left alone
	if !e.InstanceExists(launched.Status.ProviderID) {
		t.Fatal("the orphan was collected before its grace period")
	}
	e.Clock.Step(2 * gc.Grace)
	e.WaitFor("the orphan instance to be terminated", time.Minute, func() (bool, string) {
		return !e.InstanceExists(launched.Status.ProviderID), "instance still running"
	})
	e.WaitNodeGone("orphan", time.Minute)
}

// A node that never registers: after the registration timeout (moved past by the test) the
// NodeClaim is deleted, its instance terminated, and new capacity runs the pods.
func TestNodeThatNeverRegistersIsReplaced(t *testing.T) {
	dropped := make(chan string, 1)
	var once sync.Once
	e := env.NewWithJoiner(t, func(joiner fake.Joiner) fake.Joiner {
		return env.JoinerFunc(func(ctx context.Context, inst fake.Instance) error {
			first := false
			once.Do(func() { first = true })
			if first {
				dropped <- inst.ClaimName // the first instance's kubelet never comes up
				return nil
			}
			return joiner.Join(ctx, inst)
		})
	})
	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("web", 2, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var stuck string
	select {
	case stuck = <-dropped:
	case <-time.After(time.Minute):
		t.Fatal("no instance launched")
	}
	time.Sleep(2 * time.Second)
	if _, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().Get(e.Ctx, stuck, metav1.GetOptions{}); err != nil {
		t.Fatalf("NodeClaim %s went away before its registration timeout: %v", stuck, err)
	}
	e.Clock.Step(lifecycle.RegistrationTTL + time.Minute)
	pods := e.WaitRunning("app=web", 2, 2*time.Minute)
	// The pods may run elsewhere a moment before the claim's finalizer has ended its instance.
	e.WaitFor("the NodeClaim that never registered to go", 30*time.Second, func() (bool, string) {
		_, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().Get(e.Ctx, stuck, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("NodeClaim %s is still there (%v)", stuck, err)
	})
	for _, p := range pods {
		if p.Spec.NodeName == stuck {
			t.Fatalf("pod %s runs on the node that never registered", p.Name)
		}
	}
	for _, inst := range e.Cloud.Instances() {
		if inst.ClaimName == stuck {
			t.Fatalf("instance %s of the unregistered claim was not terminated", inst.ID)
		}
	}
	if notes := e.Events("", "NotRegistered"); len(notes) == 0 {
		t.Fatal("no NotRegistered Event explains the deletion")
	}
}
