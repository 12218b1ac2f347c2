package lifecycle

import (
	"fmt"
	"slices"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/tailor-sh/tailor/test/e2e/env"
)

// A drain finishes an eviction the PodDisruptionBudget granted but whose pod was never deleted:
// the Eviction API debits the budget and names the pod in status.disruptedPods before it deletes
// the pod, and a Tailor killed between the two (the chaos day's seed 1000 and the first run of
// seed 1 did it mid-consolidation and mid-expiration) leaves a budget that allows nothing for two
// minutes, until the disruption controller drops the entry. The test writes that state as the
// API server leaves it, then deletes the node: the granted pod must go at once, the others by
// eviction, and never more than the budget's one pod down.
func TestDrainFinishesAnEvictionItsBudgetGranted(t *testing.T) {
	e := env.New(t)
	node := e.LaunchOneNode("cut", 3)
	e.CreatePDB("cut", 1)
	e.WaitFor("the budget to allow one eviction", 30*time.Second, func() (bool, string) {
		pdb, err := e.Cluster.Kube.PolicyV1().PodDisruptionBudgets("default").Get(e.Ctx, "cut", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.DisruptionsAllowed == 1, fmt.Sprintf("%+v", pdb.Status)
	})
	granted := e.PodNames("app=cut")[0]
	// What the Eviction API writes before its delete: the pod named, the allowance spent.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pdb, err := e.Cluster.Kube.PolicyV1().PodDisruptionBudgets("default").Get(e.Ctx, "cut", metav1.GetOptions{})
		if err != nil {
			return err
		}
		pdb.Status.DisruptedPods = map[string]metav1.Time{granted: metav1.Now()}
		pdb.Status.DisruptionsAllowed = 0
		_, err = e.Cluster.Kube.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(e.Ctx, pdb, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the disruption controller to keep counting the granted pod", 30*time.Second, func() (bool, string) {
		pdb, err := e.Cluster.Kube.PolicyV1().PodDisruptionBudgets("default").Get(e.Ctx, "cut", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, named := pdb.Status.DisruptedPods[granted]
		return named && pdb.Status.CurrentHealthy == 2 && pdb.Status.DisruptionsAllowed == 0, fmt.Sprintf("%+v", pdb.Status)
	})
	budget := e.Sample(20*time.Millisecond, func() string {
		if n := e.ReadyPods("app=cut"); n < 2 {
			return fmt.Sprintf("only %d of 3 pods ready; the budget allows 1 down", n)
		}
		return ""
	})
	if err := e.Cluster.Kube.CoreV1().Nodes().Delete(e.Ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The disruption controller would free the budget 120 s after the grant; a drain that waited
	// for that would not get here within 60.
	e.WaitFor("the granted pod "+granted+" to be deleted", time.Minute, func() (bool, string) {
		_, err := e.Cluster.Kube.CoreV1().Pods("default").Get(e.Ctx, granted, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	e.WaitNodeGone(node.Name, 2*time.Minute)
	e.WaitRunning("app=cut", 3, time.Minute)
	budget.Stop(e, "the budget of one pod down")
	evs := e.EventsFor("Evicted", "Pod")
	if !slices.ContainsFunc(evs, func(ev eventsv1.Event) bool { return ev.Regarding.Name == granted }) {
		t.Errorf("no Evicted Event on the granted pod %s: %v", granted, env.Notes(evs))
	}
}
