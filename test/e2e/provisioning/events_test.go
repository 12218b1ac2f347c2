package provisioning

import (
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// A scale-up writes the Events a Karpenter user's alerts match, read back through the API server:
// each NodeClaim gets Launched, Registered and Initialized (Karpenter's condition-transition
// Events, reason the condition, message "Status condition transitioned, ..."), and the pods planned
// onto them a Nominated Event naming the NodeClaim in Karpenter's words.
func TestScaleUpWritesKarpentersEvents(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("web", 4, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.WaitRunning("app=web", 4, 2*time.Minute)
	list, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatal("no NodeClaim after the scale-up")
	}
	for _, claim := range list.Items {
		for _, cond := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
			want := fmt.Sprintf("Status condition transitioned, Type: %s, Status: Unknown -> True, Reason: %s", cond, cond)
			e.WaitFor(fmt.Sprintf("a %s Event on NodeClaim %s", cond, claim.Name), 10*time.Second, func() (bool, string) {
				evs := env.EventsOn(e.EventsFor(cond, "NodeClaim"), claim.Name)
				for _, ev := range evs {
					if strings.HasPrefix(ev.Note, want) && ev.Type == "Normal" {
						return true, ""
					}
				}
				return false, fmt.Sprint(env.Notes(evs))
			})
		}
	}
	// A pod that fit on a node launched for an earlier batch binds there without a nomination,
	// so not every pod has one; those that do name their NodeClaim as Karpenter does.
	ours := map[string]bool{}
	for _, p := range pods {
		ours[p.Name] = true
	}
	e.WaitFor("a Nominated Event on a pod of the Deployment", 10*time.Second, func() (bool, string) {
		var found []eventsv1.Event
		for _, ev := range e.EventsFor("Nominated", "Pod") {
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
