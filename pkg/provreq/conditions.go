package provreq

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1 "github.com/tailor-sh/tailor/pkg/apis/autoscaling/v1"
)

// The reasons of the conditions Tailor sets, Cluster Autoscaler's, so that Kueue and dashboards
// written for it read Tailor's answers alike.
const (
	ReasonAccepted               = "Accepted"
	ReasonCapacityIsFound        = "CapacityIsFound"
	ReasonCapacityIsNotFound     = "CapacityIsNotFound"
	ReasonCapacityIsProvisioned  = "CapacityIsProvisioned"
	ReasonFailedToCreatePods     = "FailedToCreatePods"
	ReasonReservationTimeExpired = "CapacityReservationTimeExpired"
	ReasonExpired                = "Expired"
)

// DefaultBookingTime is how long capacity stays booked for a request's pods after Provisioned,
// Cluster Autoscaler's default: long enough for Kueue to admit the job and its pods to appear.
const DefaultBookingTime = 10 * time.Minute

// CheckCapacityExpiry is how long a check-capacity request may go unprovisioned before it is
// Failed (Expired), as Cluster Autoscaler gives up on it.
const CheckCapacityExpiry = 7 * 24 * time.Hour

// served reports whether Tailor answers requests of the class; others are left to whatever
// serves them (another autoscaler, a cloud's own class).
func served(class string) bool {
	return class == autoscalingv1.ProvisioningClassCheckCapacity || class == autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp
}

func isTrue(req *autoscalingv1.ProvisioningRequest, typ string) bool {
	return meta.IsStatusConditionTrue(req.Status.Conditions, typ)
}

// finished reports whether a request needs nothing more: it failed, or its booking expired.
func finished(req *autoscalingv1.ProvisioningRequest) bool {
	return isTrue(req, autoscalingv1.Failed) || isTrue(req, autoscalingv1.BookingExpired)
}

// bookingLeft is how long the booking of a Provisioned request still runs, counted from when it
// became Provisioned; 0 or less once it has expired, and ok false if it is not Provisioned.
func bookingLeft(req *autoscalingv1.ProvisioningRequest, now time.Time, bookingTime time.Duration) (left time.Duration, ok bool) {
	c := meta.FindStatusCondition(req.Status.Conditions, autoscalingv1.Provisioned)
	if c == nil || c.Status != metav1.ConditionTrue {
		return 0, false
	}
	return c.LastTransitionTime.Add(bookingTime).Sub(now), true
}

// set sets a condition on req's status and reports whether that changed it. The transition time
// moves only when the status does, so the booking counts from the first Provisioned=True.
func set(req *autoscalingv1.ProvisioningRequest, typ string, status metav1.ConditionStatus, reason, message string, now time.Time) bool {
	return meta.SetStatusCondition(&req.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message,
		ObservedGeneration: req.Generation, LastTransitionTime: metav1.NewTime(now)})
}

// accept marks req Accepted: Tailor serves its class and works on it.
func accept(req *autoscalingv1.ProvisioningRequest, now time.Time) bool {
	return set(req, autoscalingv1.Accepted, metav1.ConditionTrue, ReasonAccepted, "Tailor serves this class and is working on the request", now)
}

// fail marks req Failed for good, with the reason and message.
func fail(req *autoscalingv1.ProvisioningRequest, reason, message string, now time.Time) bool {
	return set(req, autoscalingv1.Failed, metav1.ConditionTrue, reason, message, now)
}

// provisioned marks req Provisioned: its capacity is there and booked.
func provisioned(req *autoscalingv1.ProvisioningRequest, reason, message string, now time.Time) bool {
	return set(req, autoscalingv1.Provisioned, metav1.ConditionTrue, reason, message, now)
}

// notProvisioned says why req is not Provisioned yet.
func notProvisioned(req *autoscalingv1.ProvisioningRequest, reason, message string, now time.Time) bool {
	return set(req, autoscalingv1.Provisioned, metav1.ConditionFalse, reason, message, now)
}

// expire marks req BookingExpired: its room is no longer kept.
func expire(req *autoscalingv1.ProvisioningRequest, now time.Time) bool {
	return set(req, autoscalingv1.BookingExpired, metav1.ConditionTrue, ReasonReservationTimeExpired,
		"The booking time has passed since Provisioned; the capacity is no longer kept for the request's pods", now)
}
