package e2e

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func (e *env) claimOfNode(node *corev1.Node) *karpv1.NodeClaim {
	e.t.Helper()
	claims, err := e.cluster.Tailor.KarpenterV1().NodeClaims().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, c := range claims.Items {
		if c.Status.ProviderID == node.Spec.ProviderID {
			return &c
		}
	}
	e.t.Fatalf("no NodeClaim for node %s (%s)", node.Name, node.Spec.ProviderID)
	return nil
}

func (e *env) podNames(selector string) []string {
	e.t.Helper()
	list, err := e.cluster.Kube.CoreV1().Pods("").List(e.ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

// watchTaintBeforeDeletion reports, once the node is gone, whether it was tainted
// karpenter.sh/disrupted while not yet being deleted: the interruption's own taint, not the
// termination path's.
func (e *env) watchTaintBeforeDeletion(node *corev1.Node) <-chan error {
	e.t.Helper()
	w, err := e.cluster.Kube.CoreV1().Nodes().Watch(e.ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + node.Name, ResourceVersion: node.ResourceVersion})
	if err != nil {
		e.t.Fatal(err)
	}
	out := make(chan error, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				break
			}
			if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey }) {
				if n.DeletionTimestamp != nil {
					out <- fmt.Errorf("node %s was first seen tainted %s only once it was being deleted", n.Name, karpv1.DisruptedTaintKey)
				} else {
					out <- nil
				}
				return
			}
		}
		out <- fmt.Errorf("node %s went without ever being tainted %s", node.Name, karpv1.DisruptedTaintKey)
	}()
	return out
}

// eventsFor lists the Events of that reason about objects of that kind.
func (e *env) eventsFor(reason, kind string) []eventsv1.Event {
	e.t.Helper()
	list, err := e.cluster.Kube.EventsV1().Events("").List(e.ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

func notes(evs []eventsv1.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Regarding.Name+": "+ev.Note)
	}
	return out
}

func claimSummary(claims []karpv1.NodeClaim) string {
	var parts []string
	for _, c := range claims {
		parts = append(parts, fmt.Sprintf("%s(initialized=%v, deleting=%v)", c.Name, c.IsTrue(karpv1.ConditionTypeInitialized), c.DeletionTimestamp != nil))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (e *env) editNodePool(name string, edit func(*karpv1.NodePool)) {
	e.t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		np, err := e.cluster.Tailor.KarpenterV1().NodePools().Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(np)
		_, err = e.cluster.Tailor.KarpenterV1().NodePools().Update(e.ctx, np, metav1.UpdateOptions{})
		return err
	}); err != nil {
		e.t.Fatalf("editing NodePool %s: %v", name, err)
	}
}

// waitDrifted waits for the claim's Drifted condition to be True with reason, or gone when
// reason is "".
func (e *env) waitDrifted(claim, reason string) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("NodeClaim %s Drifted=%q", claim, reason), time.Minute, func() (bool, string) {
		c, err := e.cluster.Tailor.KarpenterV1().NodeClaims().Get(e.ctx, claim, metav1.GetOptions{})
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
