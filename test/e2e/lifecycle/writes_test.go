package lifecycle

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// maxVersionsToRunning bounds the versions of a NodeClaim from its creation to a node running its
// pods: the create (with the finalizer), the launch's labels, Launched, one status for Registered and
// Initialized when the node is Ready by the time it registers (one more when it is not),
// Consolidatable, and the first pod's lastPodEventTime. Later pods write it no more while the
// stored time is under 10 s old. Before, Registered and Initialized were two writes, three while
// the node booted (Initialized False first), and the finalizer was a write of its own.
const maxVersionsToRunning = 7

// TestNodeClaimWritesFromLaunchToRunningPods scales a Deployment onto a NodePool that consolidates
// at once (consolidateAfter 0, as make bench-scale's) and reads every version of every NodeClaim
// the API server stored, through a watch: none takes more than maxVersionsToRunning, and each still
// gets its Initialized Event once, Unknown -> True, as Karpenter writes it; Initialized is never
// False on the way, and a node Ready when it registers is Registered and Initialized in one write.
func TestNodeClaimWritesFromLaunchToRunningPods(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	np := env.NodePool("default", karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceSize, Operator: "In", Values: []string{"large"}})
	np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(0)
	np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
	e.CreateNodePool(np)
	w, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().Watch(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("w", 8, "450m", "512Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=w", 8, 2*time.Minute)
	// Whatever the pods' arrival still writes has a few seconds to show.
	time.Sleep(3 * time.Second)
	versions := claimVersions(w)
	if len(versions) == 0 {
		t.Fatal("the watch saw no NodeClaim")
	}
	together := 0
	for name, vs := range versions {
		steps := describeWrites(vs)
		t.Logf("NodeClaim %s, %d versions: %s", name, len(vs), strings.Join(steps, "; "))
		if len(vs) > maxVersionsToRunning {
			t.Errorf("NodeClaim %s was written %d times, want at most %d: %s", name, len(vs), maxVersionsToRunning, strings.Join(steps, "; "))
		}
		for _, step := range steps {
			if strings.Contains(step, "Initialized=False") {
				t.Errorf("NodeClaim %s: Initialized False while its node booted, want Unknown: %s", name, strings.Join(steps, "; "))
			}
			if strings.Contains(step, "Registered=True") && strings.Contains(step, "Initialized=True") {
				together++
			}
		}
		want := "Status condition transitioned, Type: Initialized, Status: Unknown -> True, Reason: Initialized"
		e.WaitFor("one Initialized Event on NodeClaim "+name, 10*time.Second, func() (bool, string) {
			notes := env.Notes(env.EventsOn(e.EventsFor(karpv1.ConditionTypeInitialized, "NodeClaim"), name))
			return len(notes) == 1 && strings.Contains(notes[0], want), fmt.Sprint(notes)
		})
	}
	// kwok makes a node Ready within moments of its creation, which the launch does before it
	// writes Launched: registration finds it Ready, and one write says both.
	if together == 0 {
		t.Errorf("no NodeClaim of %d was Registered and Initialized in one write", len(versions))
	}
}

// claimVersions returns the versions the watch delivered until it fell quiet for a second, by
// NodeClaim, oldest first.
func claimVersions(w watch.Interface) map[string][]*karpv1.NodeClaim {
	out := map[string][]*karpv1.NodeClaim{}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out
			}
			if c, isClaim := ev.Object.(*karpv1.NodeClaim); isClaim && ev.Type != watch.Deleted {
				out[c.Name] = append(out[c.Name], c)
			}
		case <-time.After(time.Second):
			return out
		}
	}
}

// describeWrites says what each version changed: the conditions whose status, reason or message
// changed, the metadata, lastPodEventTime.
func describeWrites(vs []*karpv1.NodeClaim) []string {
	out := []string{"created"}
	for i := 1; i < len(vs); i++ {
		prev, cur := vs[i-1], vs[i]
		var what []string
		if !maps.Equal(prev.Labels, cur.Labels) || !maps.Equal(prev.Annotations, cur.Annotations) || !slices.Equal(prev.Finalizers, cur.Finalizers) {
			what = append(what, "metadata")
		}
		for _, c := range cur.Status.Conditions {
			if p := prev.GetCondition(c.Type); p == nil || p.Status != c.Status || p.Reason != c.Reason || p.Message != c.Message {
				what = append(what, fmt.Sprintf("%s=%s", c.Type, c.Status))
			}
		}
		if !prev.Status.LastPodEventTime.Equal(&cur.Status.LastPodEventTime) {
			what = append(what, "lastPodEventTime")
		}
		out = append(out, strings.Join(what, ","))
	}
	return out
}
