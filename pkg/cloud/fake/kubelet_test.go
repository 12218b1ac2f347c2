package fake

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// The API server side of joining (kubelet.Joiner) is tested in pkg/cloud/fake/kubelet.
func TestJoinsAfterDelayWithTheClaimsNode(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	j := &recordingJoiner{joined: make(chan Instance, 1)}
	p := New(Options{Clock: clk, Joiner: j, RegistrationDelay: 30 * time.Second})

	claim := newClaim("default-abcde", nil, req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))
	claim.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	claim.Spec.StartupTaints = []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoExecute}}
	created, err := p.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}

	// The node must not join before the boot delay has passed on the injected clock.
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return clk.HasWaiters(), nil
	}); err != nil {
		t.Fatal("the provider never waited on the clock")
	}
	select {
	case inst := <-j.joined:
		t.Fatalf("%s joined before the registration delay", inst.ProviderID)
	case <-time.After(100 * time.Millisecond):
	}
	clk.Step(30 * time.Second)

	var node *corev1.Node
	select {
	case inst := <-j.joined:
		node = NodeFor(inst)
	case <-time.After(5 * time.Second):
		t.Fatal("node never joined")
	}

	for k, v := range map[string]string{
		corev1.LabelHostname:           "default-abcde",
		corev1.LabelInstanceTypeStable: "t3a.large",
		corev1.LabelArchStable:         "amd64",
		corev1.LabelTopologyZone:       ZoneC,
		corev1.LabelTopologyRegion:     Region,
		karpv1.CapacityTypeLabelKey:    karpv1.CapacityTypeSpot,
		karpv1.NodePoolLabelKey:        "default",
		"team":                         "a",
	} {
		if node.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	wantTaints := []corev1.Taint{claim.Spec.Taints[0], claim.Spec.StartupTaints[0], karpv1.UnregisteredNoExecuteTaint}
	if len(node.Spec.Taints) != len(wantTaints) {
		t.Fatalf("taints = %v, want %v", node.Spec.Taints, wantTaints)
	}
	for i, want := range wantTaints {
		if got := node.Spec.Taints[i]; got.Key != want.Key || got.Value != want.Value || got.Effect != want.Effect {
			t.Errorf("taint %d = %v, want %v", i, got, want)
		}
	}
	if node.Spec.ProviderID != created.Status.ProviderID || node.Annotations[KwokNodeAnnotation] != "fake" ||
		node.Status.Phase != corev1.NodePending {
		t.Errorf("node = providerID %q annotations %v phase %q", node.Spec.ProviderID, node.Annotations, node.Status.Phase)
	}
	if node.Status.Allocatable.Cpu().MilliValue() != 1930 || node.Status.Capacity.Pods().Value() != 29 {
		t.Errorf("node resources: capacity %v allocatable %v", node.Status.Capacity, node.Status.Allocatable)
	}
}

// recordingJoiner hands over the instances that join, to see which boot and what registers.
type recordingJoiner struct{ joined chan Instance }

func (r *recordingJoiner) Join(_ context.Context, inst Instance) error {
	r.joined <- inst
	return nil
}

func TestTerminatedInstanceNeverJoins(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	j := &recordingJoiner{joined: make(chan Instance, 2)}
	p := New(Options{Clock: clk, Joiner: j, RegistrationDelay: time.Minute})
	doomed, err := p.Create(ctx, newClaim("doomed", nil))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := p.Create(ctx, newClaim("kept", nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, doomed); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return clk.Waiters() == 2, nil
	}); err != nil {
		t.Fatal("the provider never waited on the clock")
	}
	clk.Step(time.Minute)
	select {
	case got := <-j.joined:
		if got.ProviderID != kept.Status.ProviderID {
			t.Fatalf("joined %s, want %s", got.ProviderID, kept.Status.ProviderID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no instance joined")
	}
	select {
	case got := <-j.joined:
		t.Fatalf("terminated instance %s joined", got.ProviderID)
	case <-time.After(100 * time.Millisecond):
	}
}
