package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// A scale-up writes the Events a Karpenter user's alerts match, read back through the API server:
// each NodeClaim gets Launched, Registered and Initialized (Karpenter's condition-transition
// Events, reason the condition, message "Status condition transitioned, ..."), and the pods planned
// onto them a Nominated Event naming the NodeClaim in Karpenter's words.
func TestScaleUpWritesKarpentersEvents(t *testing.T) {
	e := newEnv(t)
	e.applyExample("ec2nodeclass.yaml")
	e.applyExample("nodepool.yaml")
	if _, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, deploymentOf("web", 4, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.waitRunning("app=web", 4, 2*time.Minute)
	list, err := e.cluster.Tailor.KarpenterV1().NodeClaims().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatal("no NodeClaim after the scale-up")
	}
	for _, claim := range list.Items {
		for _, cond := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
			want := fmt.Sprintf("Status condition transitioned, Type: %s, Status: Unknown -> True, Reason: %s", cond, cond)
			e.waitFor(fmt.Sprintf("a %s Event on NodeClaim %s", cond, claim.Name), 10*time.Second, func() (bool, string) {
				evs := eventsOn(e.eventsFor(cond, "NodeClaim"), claim.Name)
				for _, ev := range evs {
					if strings.HasPrefix(ev.Note, want) && ev.Type == "Normal" {
						return true, ""
					}
				}
				return false, fmt.Sprint(notes(evs))
			})
		}
	}
	// A pod that fit on a node launched for an earlier batch binds there without a nomination,
	// so not every pod has one; those that do name their NodeClaim as Karpenter does.
	ours := map[string]bool{}
	for _, p := range pods {
		ours[p.Name] = true
	}
	e.waitFor("a Nominated Event on a pod of the Deployment", 10*time.Second, func() (bool, string) {
		var found []eventsv1.Event
		for _, ev := range e.eventsFor("Nominated", "Pod") {
			if ours[ev.Regarding.Name] {
				found = append(found, ev)
			}
		}
		for _, ev := range found {
			if name, ok := strings.CutPrefix(ev.Note, "Pod should schedule on: nodeclaim/"); !ok || name == "" {
				t.Fatalf("Nominated Event on pod %s: %q, want %q", ev.Regarding.Name, ev.Note, "Pod should schedule on: nodeclaim/NAME")
			}
		}
		return len(found) > 0, "none yet"
	})
}

// eventsOn keeps the Events about the object named name.
func eventsOn(evs []eventsv1.Event, name string) []eventsv1.Event {
	var out []eventsv1.Event
	for _, ev := range evs {
		if ev.Regarding.Name == name {
			out = append(out, ev)
		}
	}
	return out
}
