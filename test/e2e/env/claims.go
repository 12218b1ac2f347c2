package env

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// ClaimOfNode is the NodeClaim of node, by provider ID; it fails the test if there is none.
func (e *Env) ClaimOfNode(node *corev1.Node) *karpv1.NodeClaim {
	e.T.Helper()
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	for _, c := range claims.Items {
		if c.Status.ProviderID == node.Spec.ProviderID {
			return &c
		}
	}
	e.T.Fatalf("no NodeClaim for node %s (%s)", node.Name, node.Spec.ProviderID)
	return nil
}

// PodNames lists the names of the pods with the label selector.
func (e *Env) PodNames(selector string) []string {
	e.T.Helper()
	list, err := e.Cluster.Kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.T.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

// EventsFor lists the Events of that reason about objects of that kind.
func (e *Env) EventsFor(reason, kind string) []eventsv1.Event {
	e.T.Helper()
	list, err := e.Cluster.Kube.EventsV1().Events("").List(e.Ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		e.T.Fatal(err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// Notes are the Events' notes.
func Notes(evs []eventsv1.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Regarding.Name+": "+ev.Note)
	}
	return out
}

// ClaimSummary describes NodeClaims for a failure message.
func ClaimSummary(claims []karpv1.NodeClaim) string {
	var parts []string
	for _, c := range claims {
		parts = append(parts, fmt.Sprintf("%s(initialized=%v, deleting=%v)", c.Name, c.IsTrue(karpv1.ConditionTypeInitialized), c.DeletionTimestamp != nil))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// EditNodePool applies edit to the NodePool named name, retrying on conflicts.
func (e *Env) EditNodePool(name string, edit func(*karpv1.NodePool)) {
	e.T.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		np, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(np)
		_, err = e.Cluster.Tailor.KarpenterV1().NodePools().Update(e.Ctx, np, metav1.UpdateOptions{})
		return err
	}); err != nil {
		e.T.Fatalf("editing NodePool %s: %v", name, err)
	}
}

// WaitDrifted waits for the claim's Drifted condition to be True with reason, or gone when
// reason is "".
func (e *Env) WaitDrifted(claim, reason string) {
	e.T.Helper()
	e.WaitFor(fmt.Sprintf("NodeClaim %s Drifted=%q", claim, reason), time.Minute, func() (bool, string) {
		c, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().Get(e.Ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond := c.GetCondition(karpv1.ConditionTypeDrifted)
		if reason == "" {
			return cond == nil, fmt.Sprintf("%+v", cond)
		}
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == reason, fmt.Sprintf("%+v", cond)
	})
}

// EventsOn keeps the Events about the object named name.
func EventsOn(evs []eventsv1.Event, name string) []eventsv1.Event {
	var out []eventsv1.Event
	for _, ev := range evs {
		if ev.Regarding.Name == name {
			out = append(out, ev)
		}
	}
	return out
}
