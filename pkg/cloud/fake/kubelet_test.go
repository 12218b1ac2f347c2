package fake

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func TestKubeletJoinerRegistersNodeAfterDelay(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	client := kubefake.NewClientset()
	p := New(Options{Clock: clk, Joiner: &KubeletJoiner{Client: client}, RegistrationDelay: 30 * time.Second})

	claim := newClaim("default-abcde", nil, req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))
	claim.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	claim.Spec.StartupTaints = []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoExecute}}
	created, err := p.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}

	// The node must not exist before the boot delay has passed on the injected clock.
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return clk.HasWaiters(), nil
	}); err != nil {
		t.Fatal("the provider never waited on the clock")
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, "default-abcde", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node exists before the registration delay: %v", err)
	}
	clk.Step(30 * time.Second)

	var node *corev1.Node
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		node, err = client.CoreV1().Nodes().Get(ctx, "default-abcde", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("node never registered: %v", err)
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

func TestKubeletJoinerIsIdempotent(t *testing.T) {
	ctx := context.Background()
	client := kubefake.NewClientset()
	p := New(Options{Clock: clocktesting.NewFakeClock(epoch)})
	if _, err := p.Create(ctx, newClaim("a", nil)); err != nil {
		t.Fatal(err)
	}
	j := &KubeletJoiner{Client: client}
	inst := p.Instances()[0]
	for i := 0; i < 2; i++ {
		if err := j.Join(ctx, inst); err != nil {
			t.Fatalf("Join %d: %v", i, err)
		}
	}
}

// recordingJoiner counts joins, to see which instances boot.
type recordingJoiner struct{ joined chan string }

func (r *recordingJoiner) Join(_ context.Context, inst Instance) error {
	r.joined <- inst.ProviderID
	return nil
}

func TestTerminatedInstanceNeverJoins(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	j := &recordingJoiner{joined: make(chan string, 2)}
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
		if got != kept.Status.ProviderID {
			t.Fatalf("joined %s, want %s", got, kept.Status.ProviderID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no instance joined")
	}
	select {
	case got := <-j.joined:
		t.Fatalf("terminated instance %s joined", got)
	case <-time.After(100 * time.Millisecond):
	}
}
