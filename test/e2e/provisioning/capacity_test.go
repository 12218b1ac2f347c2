package provisioning

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

func spotOfferings(instanceType string) []cloud.OfferingKey {
	var keys []cloud.OfferingKey
	for _, z := range fake.Zones() {
		keys = append(keys, cloud.OfferingKey{InstanceType: instanceType, Zone: z, CapacityType: karpv1.CapacityTypeSpot})
	}
	return keys
}

func offeringAvailable(e *env.Env, k cloud.OfferingKey) bool {
	types, err := e.Cloud.InstanceTypes(e.Ctx, nil)
	if err != nil {
		e.T.Fatal(err)
	}
	for _, it := range types {
		for _, o := range it.Offerings {
			if it.Name == k.InstanceType && o.Zone == k.Zone && o.CapacityType == k.CapacityType {
				return o.Available
			}
		}
	}
	e.T.Fatalf("offering %+v not in the catalog", k)
	return false
}

// A launch that meets a capacity shortage falls back to the claim's next offering, and the short
// offering is left out of plans for three minutes. When every offering of a claim is short, the
// claim is deleted with the reason on it and in an Event, and its pods are planned again.
func TestCapacityShortage(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	np := env.NodePool("pinned",
		karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6g.large", "c6g.xlarge"}},
		karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeSpot}})
	e.CreateNodePool(np)
	short := spotOfferings("c6g.large")
	e.Cloud.InjectInsufficientCapacity(short...)

	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("a", 1, "500m", "512Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.WaitRunning("app=a", 1, time.Minute)
	node, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, pods[0].Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Labels[corev1.LabelInstanceTypeStable]; got != "c6g.xlarge" {
		t.Fatalf("launched %s; want the fallback c6g.xlarge", got)
	}
	for _, k := range short {
		if offeringAvailable(e, k) {
			t.Fatalf("short offering %+v still advertised after a launch met the shortage", k)
		}
	}

	// Now everything the pool allows is short: the claim cannot launch at all.
	e.Cloud.InjectInsufficientCapacity(spotOfferings("c6g.xlarge")...)
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("b", 1, "3600m", "512Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("an InsufficientCapacity Event", time.Minute, func() (bool, string) {
		return len(e.Events("", "InsufficientCapacityError")) > 0, "none yet"
	})
	e.WaitFor("the pod to be explained as unplaceable", time.Minute, func() (bool, string) {
		notes := e.Events("default", "FailedProvisioning")
		return len(notes) > 0, fmt.Sprint(notes)
	})
	// Three minutes later, with capacity back, the offerings return and the pod runs.
	e.Cloud.ClearInsufficientCapacity()
	e.Clock.Step(cloud.UnavailableTTL)
	e.WaitRunning("app=b", 1, time.Minute)
}

// A launch that fails for another reason also gives the claim up, with the error on it and in an
// Event, and the pods get a new claim.
func TestLaunchFailureReplansOnANewClaim(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	e.Cloud.FailNextCreate(errors.New("simulated: the launch template is invalid"))
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("a", 2, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=a", 2, time.Minute)
	notes := e.Events("", "LaunchFailed")
	if len(notes) == 0 {
		t.Fatal("no LaunchFailed Event")
	}
	if n := len(e.Cloud.Instances()); n != 1 {
		t.Fatalf("%d instances; want the one of the second claim", n)
	}
}
