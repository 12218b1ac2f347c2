package lifecycle

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/tailor-sh/tailor/pkg/apis"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// Transition is one change of a NodeClaim condition's status between two observed versions.
type Transition struct {
	Type     string
	From, To metav1.ConditionStatus
	Reason   string
	Message  string
}

// EventMessage is the Event's message, worded as Karpenter's status controller words it, so that an
// alert or a search written on Karpenter's message matches Tailor's.
func (t Transition) EventMessage() string {
	msg := fmt.Sprintf("Status condition transitioned, Type: %s, Status: %s -> %s, Reason: %s", t.Type, t.From, t.To, t.Reason)
	if t.Message != "" {
		msg += ", Message: " + t.Message
	}
	return msg
}

// Transitions lists the conditions whose status differs between old and cur, in cur's order. A
// condition old lacks was Unknown: Karpenter creates its NodeClaims with every condition Unknown,
// Tailor with none, and both first launch with Unknown -> True. Drifted is left out: the drift
// controller writes its own Drifted Event, with the drift's reason, when the condition changes.
func Transitions(old, cur *karpv1.NodeClaim) []Transition {
	var out []Transition
	for _, c := range cur.Status.Conditions {
		if c.Type == karpv1.ConditionTypeDrifted {
			continue
		}
		from := metav1.ConditionUnknown
		if prev := old.GetCondition(c.Type); prev != nil {
			from = prev.Status
		}
		if from == c.Status {
			continue
		}
		out = append(out, Transition{Type: c.Type, From: from, To: c.Status, Reason: c.Reason, Message: c.Message})
	}
	return out
}

// recordTransitions writes one Normal Event per transition on the NodeClaim, with the condition's
// type as its reason, as Karpenter does: an alert on a NodeClaim's Launched, Registered,
// Initialized or Ready Event (or on Consolidatable, DisruptionReason, ...) finds Tailor's. Only
// transitions between two versions the informer delivers are seen: a claim first seen already
// Launched (after a restart) writes nothing for it, and neither does Karpenter.
func recordTransitions(rec events.EventRecorder, old, cur *karpv1.NodeClaim) {
	if rec == nil {
		return
	}
	ts := Transitions(old, cur)
	if len(ts) == 0 {
		return
	}
	regarding := apis.ForEvents(cur)
	for _, t := range ts {
		rec.Eventf(regarding, nil, corev1.EventTypeNormal, t.Type, "Status", "%s", t.EventMessage())
	}
}
