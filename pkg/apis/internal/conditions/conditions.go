// Package conditions holds the status-condition bookkeeping shared by the API packages, so that
// NodeClaims, NodePools and EC2NodeClasses report conditions the same way Karpenter's do.
package conditions

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Ready is the root condition type that Rollup computes.
const Ready = "Ready"

// maxMessage is the CRD's limit on condition messages (from metav1.Condition). A longer message,
// e.g. a cloud error with a full request dump, would make the whole status write fail.
const maxMessage = 32768

// Set writes one condition into conds. It keeps lastTransitionTime when the status does not
// change, so "True since" stays meaningful across re-reconciles, and records the generation the
// condition was computed from. An empty reason becomes the condition type because the CRD requires
// a non-empty CamelCase reason. It reports whether anything changed.
func Set(conds *[]metav1.Condition, generation int64, condType string, status metav1.ConditionStatus, reason, message string, now time.Time) bool {
	if reason == "" {
		reason = condType
	}
	if len(message) > maxMessage {
		message = message[:maxMessage]
	}
	if c := meta.FindStatusCondition(*conds, condType); c != nil && c.Status == status &&
		c.Reason == reason && c.Message == message && c.ObservedGeneration == generation {
		return false
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now),
	})
	return true
}

// Rollup sets Ready from its dependents, as Karpenter's status conditions do: False (with the
// first False dependent's reason and message) when any dependent is False, Unknown when some
// dependent is missing or Unknown, True when all are True.
func Rollup(conds *[]metav1.Condition, generation int64, now time.Time, dependents ...string) bool {
	status, reason, message := metav1.ConditionTrue, Ready, ""
	for _, t := range dependents {
		c := meta.FindStatusCondition(*conds, t)
		if c != nil && c.Status == metav1.ConditionFalse {
			status, reason, message = metav1.ConditionFalse, c.Reason, c.Message
			break
		}
		if status == metav1.ConditionTrue && (c == nil || c.Status != metav1.ConditionTrue) {
			status, reason, message = metav1.ConditionUnknown, "AwaitingReconciliation", t+" is not known yet"
			if c != nil {
				reason, message = c.Reason, c.Message
			}
		}
	}
	return Set(conds, generation, Ready, status, reason, message, now)
}
