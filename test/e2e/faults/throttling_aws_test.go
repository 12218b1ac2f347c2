package faults

import (
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// chaos is set by `make chaos`: the fault tests then run at the full length.
var chaos = os.Getenv("TAILOR_CHAOS") != ""

// TestEC2ThrottlingBacksOff: a burst of pods, each needing its own node, arrives while EC2
// answers every call with RequestLimitExceeded, and is then served slowly. Every pod ends Running;
// no NodeClaim has two instances and no instance lacks a NodeClaim; throttling leaves no offering
// marked unavailable (it is not a capacity shortage); and Tailor's EC2 request rate in the
// throttled window falls well below what it sent unthrottled for the same work.
func TestEC2ThrottlingBacksOff(t *testing.T) {
	throttle, latency := 15*time.Second, 500*time.Millisecond
	if chaos {
		throttle, latency = 60*time.Second, 2*time.Second
	}
	e := env.NewAWS(t)
	e.CreateClass(env.AWSClass("default", "al2023@latest", nil))
	pool := env.AWSPool("default", "default")
	pool.Spec.Disruption.ConsolidateAfter = karpv1.NillableDuration{} // Never: the fleet holds still while counted
	e.CreateNodePool(pool)

	// Baseline: the same work, unthrottled.
	start := e.Clock.Now()
	createSpreadPods(e, "baseline", 6)
	e.WaitRunning("app=baseline", 6, 2*time.Minute)
	baseline := ec2Rate(e.Emu.CallLog(), start, e.Clock.Now())
	unavailableBefore := unavailableOfferings(e, t)

	start = e.Clock.Now()
	e.Emu.ThrottleEC2For(throttle)
	createSpreadPods(e, "burst", 6)
	time.Sleep(throttle)
	e.Emu.SetLatency(latency)
	e.WaitRunning("app=burst", 6, throttle+3*time.Minute)
	e.Emu.SetLatency(0)
	settled := e.Clock.Now()

	log := e.Emu.CallLog()
	// The first seconds are the backlog meeting the first throttling answers; what matters is
	// the rate once the client knows it is throttled.
	late := ec2Rate(log, start.Add(throttle/3), start.Add(throttle))
	first := ec2Rate(log, start, start.Add(time.Second))
	t.Logf("EC2 calls/s: unthrottled %.1f (%s); throttled window first second %.1f, last two thirds %.1f; all pods Running %.1f s after the burst (throttled %s, then %s per call)",
		baseline.rate, baseline.window.Round(100*time.Millisecond), first.rate, late.rate, settled.Sub(start).Seconds(), throttle, latency)
	if late.throttled != late.calls {
		t.Errorf("%d of %d EC2 calls in the window were answered: the emulator did not throttle", late.calls-late.throttled, late.calls)
	}
	// The baseline is calls over however long the unthrottled launches took, so a slow machine
	// lowers it, while the throttled rate is the SDK's token bucket's and does not fall with it:
	// a floor of 2 calls/s keeps a slow run from failing, and is still a tenth of what the
	// standard retryer sent throttled (19 calls/s).
	if ceiling := max(baseline.rate/2, 2); late.rate > ceiling {
		t.Errorf("throttled, Tailor still sent %.1f EC2 calls/s (at most %.1f wanted); unthrottled it sent %.1f: it did not back off", late.rate, ceiling, baseline.rate)
	}
	if after := unavailableOfferings(e, t); len(after) > len(unavailableBefore) {
		t.Errorf("throttling marked offerings unavailable: %d before, %d after: %v", len(unavailableBefore), len(after), after)
	}
	expectOneInstancePerClaim(e, t)
}

// createSpreadPods makes n pods labelled app=name that each need a node of their own: they
// refuse to share one with any pod of the group, whichever burst it came in.
func createSpreadPods(e *env.AWS, name string, n int) {
	e.T.Helper()
	for i := range n {
		spec := env.PodSpec("500m", "256Mi")
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"group": "spread"}}}}}}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: "default",
			Labels: map[string]string{"app": name, "group": "spread"}}, Spec: spec}
		if _, err := e.Cluster.Kube.CoreV1().Pods("default").Create(e.Ctx, pod, metav1.CreateOptions{}); err != nil {
			e.T.Fatalf("creating pod %s: %v", pod.Name, err)
		}
	}
}

type callRate struct {
	calls, throttled int
	window           time.Duration
	rate             float64
}

// ec2Rate counts the EC2 calls the emulator saw in [from, to).
func ec2Rate(log []emulator.Call, from, to time.Time) callRate {
	r := callRate{window: to.Sub(from)}
	for _, c := range log {
		if c.EC2 && !c.Time.Before(from) && c.Time.Before(to) {
			r.calls++
			if c.Throttled {
				r.throttled++
			}
		}
	}
	r.rate = float64(r.calls) / r.window.Seconds()
	return r
}

// unavailableOfferings lists the default NodePool's offerings the provider avoids.
func unavailableOfferings(e *env.AWS, t *testing.T) []cloud.OfferingKey {
	t.Helper()
	pool, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	types, err := e.Provider.InstanceTypes(e.Ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var out []cloud.OfferingKey
	for _, it := range types {
		for _, o := range it.Offerings {
			if !o.Available {
				out = append(out, cloud.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType})
			}
		}
	}
	return out
}

// expectOneInstancePerClaim: every running instance carries the name of an existing NodeClaim,
// no NodeClaim has two, and every launched NodeClaim's instance is running.
func expectOneInstancePerClaim(e *env.AWS, t *testing.T) {
	t.Helper()
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]karpv1.NodeClaim{}
	for _, c := range claims.Items {
		byName[c.Name] = c
	}
	perClaim := map[string][]string{}
	running := map[string]bool{}
	for _, inst := range e.Emu.Instances() {
		if inst.State == "terminated" {
			continue
		}
		name := inst.Tags[awsv1.TagKeyNodeClaim]
		if _, ok := byName[name]; !ok {
			t.Errorf("instance %s has no NodeClaim (tag %q)", inst.ID, name)
		}
		perClaim[name] = append(perClaim[name], inst.ID)
		running["aws:///"+inst.Zone+"/"+inst.ID] = true
	}
	names := make([]string, 0, len(perClaim))
	for n := range perClaim {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if ids := perClaim[n]; len(ids) > 1 {
			t.Errorf("NodeClaim %s has %d instances: %v", n, len(ids), ids)
		}
	}
	for _, c := range claims.Items {
		if c.Status.ProviderID != "" && !running[c.Status.ProviderID] {
			t.Errorf("NodeClaim %s's instance %s is not running", c.Name, c.Status.ProviderID)
		}
	}
}
