package provisioning

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/test/e2e/env"
)

// zoneOf returns the zone of the node the pod runs on.
func zoneOf(e *env.Env, p corev1.Pod) string {
	e.T.Helper()
	n, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	return n.Labels[corev1.LabelTopologyZone]
}

// TestHeaviestReachablePreferenceWins: a pod prefers a zone no NodePool offers (weight 100), zone
// b (weight 50) and zone a (weight 1). Karpenter gives up the heaviest term and honours the next,
// and kube-scheduler's NodeAffinity score ranks zone b's nodes above zone a's: the pod runs in
// zone b.
func TestHeaviestReachablePreferenceWins(t *testing.T) {
	e := env.New(t)
	e.Apply("testdata/preferences/pool.yaml", "testdata/preferences/weighted.yaml")
	pods := e.WaitRunning("app=weighted", 1, 60*time.Second)
	if zone := zoneOf(e, pods[0]); zone != "us-west-2b" {
		t.Fatalf("pod runs in zone %s; want us-west-2b, the heaviest preferred zone a NodePool offers", zone)
	}
}

// TestPodsThatExcludeEachOtherLargestFirst: three 2-cpu pods, one pinned to each zone, and a pod
// without requests that cannot share a zone with any of them, the anti-affinity on the small
// pod's side or on the big pods'. The four pods are pending before the NodePool exists, so one
// plan weighs them together; the NodePool never consolidates, as an eviction deletes a bare pod. As in Karpenter, which plans the largest first, the three big pods
// run, one node per zone, and the small pod stays Pending with a reason; a plan that placed the
// small pod first would lock a big one out of its zone.
func TestPodsThatExcludeEachOtherLargestFirst(t *testing.T) {
	for _, file := range []string{"small-repels-big.yaml", "big-repel-small.yaml"} {
		t.Run(strings.TrimSuffix(file, ".yaml"), func(t *testing.T) {
			e := env.New(t)
			e.Apply("testdata/exclusion/" + file)
			e.WaitFor("four pods the scheduler found no node for", 30*time.Second, func() (bool, string) {
				list, err := e.Cluster.Kube.CoreV1().Pods("default").List(e.Ctx, metav1.ListOptions{})
				if err != nil {
					return false, err.Error()
				}
				refused := 0
				for _, p := range list.Items {
					for _, c := range p.Status.Conditions {
						if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
							refused++
						}
					}
				}
				return refused == 4, ""
			})
			e.Apply("testdata/exclusion/pool.yaml")
			e.WaitFor("a FailedProvisioning Event for pod small that names anti-affinity", time.Minute, func() (bool, string) {
				list, err := e.Cluster.Kube.EventsV1().Events("default").List(e.Ctx, metav1.ListOptions{FieldSelector: "reason=FailedProvisioning"})
				if err != nil {
					return false, err.Error()
				}
				var notes []string
				for _, ev := range list.Items {
					if ev.Regarding.Name == "small" {
						notes = append(notes, ev.Note)
						if strings.Contains(ev.Note, "anti-affinity") {
							return true, ""
						}
					}
				}
				return false, strings.Join(notes, " | ")
			})
			pods := e.WaitRunning("app=big", 3, 90*time.Second)
			zones := map[string]bool{}
			for _, p := range pods {
				zones[zoneOf(e, p)] = true
			}
			if len(zones) != 3 {
				t.Fatalf("the big pods run in zones %v; want one each in three", zones)
			}
			small, err := e.Cluster.Kube.CoreV1().Pods("default").Get(e.Ctx, "small", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if small.Spec.NodeName != "" || small.Status.Phase != corev1.PodPending {
				t.Fatalf("pod small is %s on %q; want Pending and unbound", small.Status.Phase, small.Spec.NodeName)
			}
			claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(claims.Items) != 3 {
				t.Fatalf("%d NodeClaims; want one per big pod, none for the small one", len(claims.Items))
			}
		})
	}
}

// TestPreferNoScheduleIsGivenUpLast: the heavier NodePool taints its nodes PreferNoSchedule. A pod
// that does not tolerate the taint gets a node from the other NodePool, as Karpenter keeps such
// pods off those nodes until every other preference is relaxed; a pod that tolerates it gets one
// from the heavier NodePool. (The pods ask for 3 cpu each and are held to different zones, so
// that neither can join the other's NodeClaim.)
func TestPreferNoScheduleIsGivenUpLast(t *testing.T) {
	e := env.New(t)
	e.Apply("testdata/preferences/prefer-no-schedule.yaml")
	for app, pool := range map[string]string{"untolerating": "plain", "tolerating": "spare"} {
		pods := e.WaitRunning("app="+app, 1, 60*time.Second)
		n, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, pods[0].Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Labels["karpenter.sh/nodepool"]; got != pool {
			t.Errorf("pod %s runs on a node of NodePool %q, want %q", app, got, pool)
		}
	}
}
