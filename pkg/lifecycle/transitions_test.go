package lifecycle

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// A launch, a registration and an initialization each write the Event Karpenter's status
// controller writes for them: reason the condition's type, message naming the old and new status.
// Ready turns True in the same update as Initialized (its Event comes first: it is
// the earlier condition in the list). Drifted is the drift controller's to record, and
// an update that changes no status writes nothing.
func TestTransitionsWriteKarpentersEvents(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	created := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-x7k2p"}}
	launched := created.DeepCopy()
	launched.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, karpv1.ConditionTypeLaunched, "launched m6i.large on-demand in eu-west-1a", now)
	registered := launched.DeepCopy()
	registered.SetCondition(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, karpv1.ConditionTypeRegistered, "", now)
	initialized := registered.DeepCopy()
	initialized.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, karpv1.ConditionTypeInitialized, "", now)
	drifted := initialized.DeepCopy()
	drifted.SetCondition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, "NodePoolDrifted", "", now)

	rec := events.NewFakeRecorder(20)
	for _, step := range [][2]*karpv1.NodeClaim{{created, launched}, {launched, registered}, {registered, initialized}, {initialized, drifted}, {drifted, drifted}} {
		recordTransitions(rec, step[0], step[1])
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	want := []string{
		"Normal Launched Status condition transitioned, Type: Launched, Status: Unknown -> True, Reason: Launched, Message: launched m6i.large on-demand in eu-west-1a",
		"Normal Registered Status condition transitioned, Type: Registered, Status: Unknown -> True, Reason: Registered",
		"Normal Ready Status condition transitioned, Type: Ready, Status: Unknown -> True, Reason: Ready",
		"Normal Initialized Status condition transitioned, Type: Initialized, Status: Unknown -> True, Reason: Initialized",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
