package fake

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"
)

// A crash between the launch and the caller hearing of it leaves one instance, and the retry
// returns that instance rather than launching another.
func TestFaultAfterLaunchThenRetryLaunchesOnce(t *testing.T) {
	p := New(Options{Clock: clocktesting.NewFakeClock(time.Unix(0, 0))})
	claim := newClaim("crashy", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	p.InjectFault(StepAfterLaunch, Fault{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.Create(ctx, claim); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging Create returned %v; want the context's deadline", err)
	}
	if n := len(p.Instances()); n != 1 {
		t.Fatalf("%d instances after the hang; want the one launched", n)
	}
	got, err := p.Create(context.Background(), claim)
	if err != nil {
		t.Fatal(err)
	}
	insts := p.Instances()
	if len(insts) != 1 || got.Status.ProviderID != insts[0].ProviderID {
		t.Fatalf("retry gave %q with %d instances; want the first instance again", got.Status.ProviderID, len(insts))
	}
}

// Faults fire once, in order, at their own step only.
func TestFaultsAreOneShotPerStep(t *testing.T) {
	p := New(Options{Clock: clocktesting.NewFakeClock(time.Unix(0, 0))})
	boom := errors.New("boom")
	p.InjectFault(StepList, Fault{Err: boom})
	p.InjectFault(StepGet, Fault{Err: boom})
	if _, err := p.List(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("first List: %v; want boom", err)
	}
	if _, err := p.List(context.Background()); err != nil {
		t.Fatalf("second List: %v; want the fault spent", err)
	}
	if _, err := p.Get(context.Background(), "fake:///x/i-1"); !errors.Is(err, boom) {
		t.Fatalf("Get: %v; want boom", err)
	}
}
