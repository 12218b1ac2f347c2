package provreq

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1 "github.com/tailor-sh/tailor/pkg/apis/autoscaling/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

const (
	check  = autoscalingv1.ProvisioningClassCheckCapacity
	atomic = autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp
)

// fitsOn places every pod on node.
func fitsOn(node string) func([]*corev1.Pod, bool) *planner.Plan {
	return func(pods []*corev1.Pod, _ bool) *planner.Plan {
		plan := emptyPlan()
		for _, p := range pods {
			plan.FitsExisting = append(plan.FitsExisting, p)
			plan.FitsExistingOn[p.UID] = node
		}
		return plan
	}
}

// nowhere places no pod, for the reason given.
func nowhere(why string) func([]*corev1.Pod, bool) *planner.Plan {
	return func(pods []*corev1.Pod, _ bool) *planner.Plan {
		plan := emptyPlan()
		for _, p := range pods {
			plan.Unplaceable = append(plan.Unplaceable, planner.Unplaceable{Pod: p, Reasons: map[string]string{"default": why}})
		}
		return plan
	}
}

// twoPerClaim opens a new claim for every two pods when launching is allowed, and places none
// otherwise.
func twoPerClaim(pods []*corev1.Pod, launch bool) *planner.Plan {
	plan := emptyPlan()
	if !launch {
		return nowhere("no NodePool consulted")(pods, launch)
	}
	for i := 0; i < len(pods); i += 2 {
		plan.Claims = append(plan.Claims, plannedClaim(pods[i:min(i+2, len(pods))]...))
	}
	return plan
}

func TestBadInputFailsNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		name, template string
		count          int32
		fragment       string
	}{
		{"no-template", "missing", 2, "spec.podSets[0].podTemplateRef.name: PodTemplate team/missing not found"},
		{"zero", "job", 0, "spec.podSets[0].count is 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.addTemplate("job", "1")
			w.addRequest(tc.name, atomic, tc.template, tc.count)
			w.plan = fitsOn("node-a")
			w.clock.Step(templateLag) // a template still missing this long after is missing
			req, _ := w.reconcile(tc.name)
			expectCondition(t, req, autoscalingv1.Failed, metav1.ConditionTrue, ReasonFailedToCreatePods, "ProvisioningRequest team/"+tc.name+": "+tc.fragment)
			if len(w.planned) != 0 || len(w.nodeClaim.created) != 0 {
				t.Fatalf("planned %d times and created %d claims for bad input", len(w.planned), len(w.nodeClaim.created))
			}
		})
	}
}

func TestUnknownClassIsLeftAlone(t *testing.T) {
	w := newWorld(t)
	w.addTemplate("job", "1")
	w.addRequest("other", "queued-provisioning.gke.io", "job", 2)
	w.plan = fitsOn("node-a")
	req, requeue := w.reconcile("other")
	if len(req.Status.Conditions) != 0 || w.status.writes != 0 || requeue != 0 || len(w.planned) != 0 {
		t.Fatalf("another class was answered: %+v, %d writes, requeue %s", req.Status.Conditions, w.status.writes, requeue)
	}
}

func TestCheckCapacity(t *testing.T) {
	w := newWorld(t)
	w.addTemplate("job", "1")
	w.addRequest("fits", check, "job", 3)
	w.plan = fitsOn("node-a")
	req, requeue := w.reconcile("fits")
	expectCondition(t, req, autoscalingv1.Accepted, metav1.ConditionTrue, ReasonAccepted, "")
	expectCondition(t, req, autoscalingv1.Provisioned, metav1.ConditionTrue, ReasonCapacityIsFound, "All 3 pods fit")
	if requeue != DefaultBookingTime || len(w.planned) != 1 || w.planned[0] {
		t.Fatalf("requeue %s, plans %v: want one plan without launching and a look back at the booking's end", requeue, w.planned)
	}
	if bk := w.c.opts.Bookings.get("team/fits"); bk == nil || len(bk.slots) != 3 {
		t.Fatalf("booking %+v, want 3 pods booked", bk)
	}

	w.addRequest("too-big", check, "job", 3)
	w.plan = nowhere("Insufficient cpu")
	req, requeue = w.reconcile("too-big")
	expectCondition(t, req, autoscalingv1.Provisioned, metav1.ConditionFalse, ReasonCapacityIsNotFound, `NodePool "default": Insufficient cpu`)
	if requeue != CheckAgain || w.c.opts.Bookings.get("team/too-big") != nil || condition(req, autoscalingv1.Failed) != nil {
		t.Fatalf("requeue %s, booking %v: want no booking, no failure, and a check again", requeue, w.c.opts.Bookings.get("team/too-big"))
	}
	writes := w.status.writes
	if _, _ = w.reconcile("too-big"); w.status.writes != writes {
		t.Fatal("an unchanged answer was written again")
	}
	w.clock.Step(CheckCapacityExpiry + time.Minute)
	req, _ = w.reconcile("too-big")
	expectCondition(t, req, autoscalingv1.Failed, metav1.ConditionTrue, ReasonExpired, "")
}

func TestBookingExpires(t *testing.T) {
	w := newWorld(t)
	w.addTemplate("job", "1")
	w.addRequest("fits", check, "job", 2)
	w.plan = fitsOn("node-a")
	w.reconcile("fits")
	w.clock.Step(DefaultBookingTime - time.Second)
	req, requeue := w.reconcile("fits")
	if condition(req, autoscalingv1.BookingExpired) != nil || requeue != time.Second || w.c.opts.Bookings.get("team/fits") == nil {
		t.Fatalf("expired early: requeue %s, %+v", requeue, req.Status.Conditions)
	}
	w.clock.Step(time.Second)
	req, _ = w.reconcile("fits")
	expectCondition(t, req, autoscalingv1.BookingExpired, metav1.ConditionTrue, ReasonReservationTimeExpired, "")
	if w.c.opts.Bookings.get("team/fits") != nil {
		t.Fatal("the booking outlived its time")
	}
	if _, requeue = w.reconcile("fits"); requeue != 0 || len(w.planned) != 1 {
		t.Fatalf("an expired request was looked at again: requeue %s, %d plans", requeue, len(w.planned))
	}
}

func TestAtomicScaleUpLaunchesAllThenProvisions(t *testing.T) {
	w := newWorld(t)
	w.addTemplate("job", "4")
	w.addRequest("train", atomic, "job", 4)
	w.plan = twoPerClaim
	req, _ := w.reconcile("train")
	expectCondition(t, req, autoscalingv1.Accepted, metav1.ConditionTrue, ReasonAccepted, "")
	if condition(req, autoscalingv1.Provisioned) != nil {
		t.Fatal("Provisioned before the nodes are ready")
	}
	if len(w.nodeClaim.created) != 2 {
		t.Fatalf("created %d claims, want 2", len(w.nodeClaim.created))
	}
	for _, nc := range w.nodeClaim.created {
		if nc.Annotations[RequestAnnotationKey] != "team/train" {
			t.Fatalf("claim %s not annotated with its request: %v", nc.Name, nc.Annotations)
		}
	}
	if bk := w.c.opts.Bookings.get("team/train"); bk == nil || len(bk.slots) != 4 || len(bk.claims) != 2 {
		t.Fatalf("booking %+v, want 4 pods on 2 claims", bk)
	}
	ready := w.nodeClaim.created[0].DeepCopy()
	ready.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "", "", start)
	_ = w.claims.Update(ready)
	if req, _ = w.reconcile("train"); condition(req, autoscalingv1.Provisioned) != nil {
		t.Fatal("Provisioned with one of two nodes ready")
	}
	ready = w.nodeClaim.created[1].DeepCopy()
	ready.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "", "", start)
	_ = w.claims.Update(ready)
	req, requeue := w.reconcile("train")
	expectCondition(t, req, autoscalingv1.Provisioned, metav1.ConditionTrue, ReasonCapacityIsProvisioned, "all 4 pods")
	if requeue != DefaultBookingTime || len(w.nodeClaim.created) != 2 {
		t.Fatalf("requeue %s, %d claims", requeue, len(w.nodeClaim.created))
	}
}

func TestAtomicScaleUpLaunchesNothingUnlessAllFit(t *testing.T) {
	w := newWorld(t)
	w.addTemplate("job", "4")
	w.addRequest("huge", atomic, "job", 3)
	w.plan = func(pods []*corev1.Pod, launch bool) *planner.Plan {
		// Two pods would fit; the third is over the NodePool's limits.
		plan := twoPerClaim(pods[:2], launch)
		plan.Unplaceable = nowhere("all available instance types exceed limits for nodepool")(pods[2:], launch).Unplaceable
		return plan
	}
	req, _ := w.reconcile("huge")
	expectCondition(t, req, autoscalingv1.Failed, metav1.ConditionTrue, ReasonCapacityIsNotFound, "exceed limits")
	if len(w.nodeClaim.created) != 0 || w.c.opts.Bookings.get("team/huge") != nil {
		t.Fatalf("launched %d claims for a request that cannot be met", len(w.nodeClaim.created))
	}
}

func TestAtomicScaleUpGivesBackWhenALaunchFails(t *testing.T) {
	w := newWorld(t)
	w.addTemplate("job", "4")
	w.addRequest("train", atomic, "job", 4)
	w.plan = twoPerClaim
	w.reconcile("train")
	_ = w.claims.Delete(w.nodeClaim.created[0]) // its launch failed, and the lifecycle deleted it
	req, _ := w.reconcile("train")
	expectCondition(t, req, autoscalingv1.Provisioned, metav1.ConditionFalse, ReasonCapacityIsNotFound, w.nodeClaim.created[0].Name)
	if len(w.nodeClaim.deleted) != 1 || w.nodeClaim.deleted[0] != w.nodeClaim.created[1].Name || w.c.opts.Bookings.get("team/train") != nil {
		t.Fatalf("deleted %v, want the other claim given back and the booking released", w.nodeClaim.deleted)
	}
	if req, _ = w.reconcile("train"); len(w.nodeClaim.created) != 4 || condition(req, autoscalingv1.Failed) != nil {
		t.Fatalf("created %d claims in all, want the request planned and launched again", len(w.nodeClaim.created))
	}
}

// TestAtomicScaleUpWaitsForNodePoolsThatCannotLaunchYet: while a NodePool cannot launch (its node
// class not ready yet, say), a request it might hold is not failed but planned again.
func TestAtomicScaleUpWaitsForNodePoolsThatCannotLaunchYet(t *testing.T) {
	w := newWorld(t)
	w.addTemplate("job", "4")
	w.addRequest("train", atomic, "job", 2)
	w.plan = nowhere("no NodePool can launch")
	w.held = []string{`NodePool "default": EC2NodeClass "default" is not ready`}
	req, requeue := w.reconcile("train")
	expectCondition(t, req, autoscalingv1.Provisioned, metav1.ConditionFalse, ReasonCapacityIsNotFound, "is not ready")
	if condition(req, autoscalingv1.Failed) != nil || requeue != CheckAgain {
		t.Fatalf("failed while a NodePool could not launch yet: requeue %s, %+v", requeue, req.Status.Conditions)
	}
	w.held = nil
	w.plan = twoPerClaim
	w.reconcile("train")
	if len(w.nodeClaim.created) != 1 {
		t.Fatalf("created %d claims once the NodePool could launch, want 1", len(w.nodeClaim.created))
	}
}
