package v1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeClaimSetCondition(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	nc := &NodeClaim{ObjectMeta: metav1.ObjectMeta{Generation: 3}}

	if !nc.SetCondition(ConditionTypeLaunched, metav1.ConditionTrue, "", "", t0) {
		t.Fatal("first set must report a change")
	}
	launched := nc.GetCondition(ConditionTypeLaunched)
	if launched == nil || launched.Reason != ConditionTypeLaunched || launched.ObservedGeneration != 3 ||
		!launched.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("launched: %+v", launched)
	}
	// Registered and Initialized are not known yet, so Ready is Unknown.
	if ready := nc.GetCondition(ConditionTypeReady); ready == nil || ready.Status != metav1.ConditionUnknown {
		t.Fatalf("ready after launch: %+v", ready)
	}
	if nc.SetCondition(ConditionTypeLaunched, metav1.ConditionTrue, "", "", t1) {
		t.Fatal("setting the same condition again must not report a change")
	}

	nc.SetCondition(ConditionTypeRegistered, metav1.ConditionTrue, "", "", t1)
	nc.SetCondition(ConditionTypeInitialized, metav1.ConditionFalse, "StartupTaintsPresent", "cni not ready", t1)
	ready := nc.GetCondition(ConditionTypeReady)
	if ready.Status != metav1.ConditionFalse || ready.Reason != "StartupTaintsPresent" || ready.Message != "cni not ready" {
		t.Fatalf("ready while a dependent is False: %+v", ready)
	}
	if nc.IsTrue(ConditionTypeReady) {
		t.Fatal("IsTrue(Ready) while not ready")
	}

	nc.SetCondition(ConditionTypeInitialized, metav1.ConditionTrue, "", "", t2)
	if !nc.IsTrue(ConditionTypeReady) || !nc.GetCondition(ConditionTypeReady).LastTransitionTime.Time.Equal(t2) {
		t.Fatalf("ready once all dependents are True: %+v", nc.GetCondition(ConditionTypeReady))
	}

	// A new message with the same status keeps lastTransitionTime.
	nc.Generation = 4
	if !nc.SetCondition(ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "i-123", t2) {
		t.Fatal("a new message and generation must report a change")
	}
	if c := nc.GetCondition(ConditionTypeLaunched); !c.LastTransitionTime.Time.Equal(t0) || c.ObservedGeneration != 4 || c.Message != "i-123" {
		t.Fatalf("launched after message change: %+v", c)
	}

	// Conditions outside the Ready roll-up do not touch Ready.
	nc.SetCondition(ConditionTypeDrifted, metav1.ConditionTrue, "AMIDrift", "", t2)
	if !nc.IsTrue(ConditionTypeDrifted) || !nc.IsTrue(ConditionTypeReady) {
		t.Fatal("Drifted must be set without affecting Ready")
	}
	if !nc.ClearCondition(ConditionTypeDrifted) || nc.GetCondition(ConditionTypeDrifted) != nil {
		t.Fatal("ClearCondition must remove Drifted")
	}
}

func TestNodePoolSetCondition(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	np := &NodePool{}
	np.SetCondition(ConditionTypeValidationSucceeded, metav1.ConditionTrue, "", "", now)
	np.SetCondition(ConditionTypeNodeClassReady, metav1.ConditionTrue, "", "", now)
	if !np.IsTrue(ConditionTypeReady) {
		t.Fatalf("ready: %+v", np.Status.Conditions)
	}
	np.SetCondition(ConditionTypeNodeClassReady, metav1.ConditionFalse, "NodeClassNotFound", "EC2NodeClass default not found", now)
	if r := np.GetCondition(ConditionTypeReady); r.Status != metav1.ConditionFalse || r.Reason != "NodeClassNotFound" {
		t.Fatalf("ready after node class went away: %+v", r)
	}
}
