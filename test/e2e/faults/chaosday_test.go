package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// chaosDayFixedSeeds run in `make test`; `make chaos-day SEEDS=N FIRST=M` runs N seeds from M
// after chaosDayRegressionSeeds. Seed 1 is itself a regression seed: its first run restarted
// Tailor while expiration's drain was evicting, and the drain then waited two minutes on a
// budget the cut eviction had spent (fixed: termination finishes an eviction its budget granted;
// TestDrainFinishesAnEvictionItsBudgetGranted pins it without depending on timing).
var chaosDayFixedSeeds = []uint64{1}

// chaosDayRegressionSeeds found the same defect mid-consolidation (1000, 1003) and mid-drift
// (1004); a minute each, so they run in make chaos-day, not make test.
var chaosDayRegressionSeeds = []uint64{1000, 1003, 1004}

// chaosDaySeedsEnv and chaosDayFirstEnv choose other seeds: CHAOSDAY_SEEDS=N runs the regression
// seeds and N seeds from CHAOSDAY_FIRST (default 1000); CHAOSDAY_SEEDS=3,17 (or 7, with the
// comma) runs just those.
const (
	chaosDaySeedsEnv = "CHAOSDAY_SEEDS"
	chaosDayFirstEnv = "CHAOSDAY_FIRST"
)

// chaosDayApp is the Deployment the day scales, with a PodDisruptionBudget of the same name that
// allows chaosDayMaxUnavailable pods down at once.
const (
	chaosDayApp            = "day"
	chaosDayMaxUnavailable = 1
	// chaosDayExpireAfter is the NodePool's expireAfter; the last phase moves Tailor's clock past it.
	chaosDayExpireAfter = time.Hour
	// chaosDaySettle bounds each phase's convergence after its last restart. Phases settle in
	// 3-50 s; before drains finished the evictions a cut request left granted, a phase could wait
	// the two minutes the API server holds such a budget, and the bound still shows that apart
	// from a fleet that never settles.
	chaosDaySettle = 3 * time.Minute
	// chaosDayTriggerWait is how long a restart waits for its trigger before it restarts anyway:
	// a phase may never show the state (a spot warning whose pods fit elsewhere launches nothing).
	chaosDayTriggerWait = 5 * time.Second
)

// TestChaosDay runs a scripted day of a fleet on the AWS provider over the emulator, restarting
// its one Tailor replica (abruptly: nothing released or written on the way out, every cache and
// the queue consumer built anew) at points the seed picks in each phase: a scale-up, the drift of
// the EC2NodeClass, consolidation after a scale-down, spot interruptions, and expiration. After
// every phase the fleet must settle: every pod Running and Ready, no instance leaked or doubled,
// no disruption left half done; through the whole day no more pods unavailable at once than the
// PodDisruptionBudget allows.
func TestChaosDay(t *testing.T) {
	seeds, err := chaosDaySeeds()
	if err != nil {
		t.Fatal(err)
	}
	// One seed at a time: kube-scheduler registers process-wide state.
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runChaosDay(t, seed) })
	}
}

func chaosDaySeeds() ([]uint64, error) {
	v := os.Getenv(chaosDaySeedsEnv)
	if v == "" {
		return chaosDayFixedSeeds, nil
	}
	parse := func(s string) (uint64, error) {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s=%q: %q is not a seed: %w", chaosDaySeedsEnv, v, s, err)
		}
		return n, nil
	}
	if strings.Contains(v, ",") {
		var out []uint64
		for _, s := range strings.Split(v, ",") {
			if strings.TrimSpace(s) == "" {
				continue
			}
			n, err := parse(s)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
		return out, nil
	}
	count, err := parse(v)
	if err != nil {
		return nil, err
	}
	first := uint64(1000)
	if f := os.Getenv(chaosDayFirstEnv); f != "" {
		if first, err = strconv.ParseUint(f, 10, 64); err != nil {
			return nil, fmt.Errorf("%s=%q: %w", chaosDayFirstEnv, f, err)
		}
	}
	out := append([]uint64{}, chaosDayRegressionSeeds...)
	for i := range count {
		if seed := first + i; !slices.Contains(out, seed) {
			out = append(out, seed)
		}
	}
	return out, nil
}

func runChaosDay(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	plan := newChaosDayPlan(rng)
	t.Logf("chaos day seed %d: %s", seed, plan)
	t.Cleanup(func() {
		if t.Failed() {
			// The comma inside the quotes makes CHAOSDAY_SEEDS a list of one seed; a bare number
			// is a count of seeds to run after the regression seeds (see chaosDaySeeds).
			t.Logf("chaos day seed %d failed; replay it with: CHAOSDAY_SEEDS='%d,' go test -count=1 -run TestChaosDay -v ./test/e2e/faults/", seed, seed)
		}
	})
	e := newChaosDayEnv(t)
	began := time.Now()
	e.ApplyExample("ec2nodeclass.yaml")
	e.CreateNodePool(chaosDayPool())
	e.CreatePDB(chaosDayApp, chaosDayMaxUnavailable)
	d, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf(chaosDayApp, int32(plan.replicas), "900m", "512Mi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	loss := e.watchPodLoss(chaosDayApp)
	// 1. Scale-up: the Deployment's pods are all new; nothing is disrupted yet.
	e.phase("scale-up", plan.restarts[0], func() {}, nil)

	// Every later phase disrupts running pods: from here on none may be unavailable beyond the budget.
	avail := e.watchAvailability(chaosDayApp)

	// 2. Drift: a new tag on the EC2NodeClass drifts every node; each is replaced.
	var class *awsv1.EC2NodeClass
	e.phase("drift", plan.restarts[1], func() {
		class = e.tagNodeClass("chaos-day", fmt.Sprintf("drift-%d", seed))
	}, func() []string { return e.driftedClaims(class) })

	// 3. Scale-down: consolidation removes what is left empty or packs it tighter.
	e.phase("consolidation", plan.restarts[2], func() { e.Scale(d, int32(plan.scaledTo)) },
		func() []string { return prefixed("runs no pod: ", e.emptyNodes(chaosDayApp)) })

	// 4. Spot interruptions: warnings for some spot nodes through the queue.
	var victims []string
	e.phase("interruption", plan.restarts[3], func() {
		victims = e.interruptSpotNodes(rng, plan.interruptions)
	}, func() []string { return e.stillRunning(victims) })

	// 5. Expiration: Tailor's clock passes expireAfter; every node is replaced.
	var expired []string
	e.phase("expiration", plan.restarts[4], func() {
		expired = e.claimNames()
		e.Clock.Step(chaosDayExpireAfter + time.Minute)
	}, func() []string { return e.stillClaimed(expired) })

	avail.Stop(e, chaosDayMaxUnavailable)
	loss.Stop(e)
	if visible, inFlight := e.emu.QueueDepth(env.AWSQueue); visible+inFlight != 0 {
		t.Errorf("the interruption queue still holds %d notices and %d in flight", visible, inFlight)
	}
	t.Logf("chaos day seed %d: %d restarts, settled after every phase, %v in all", seed, e.restarts.Load(), time.Since(began).Round(time.Second))
}

// chaosDayPool launches 2-vCPU nodes, so the day's pods take two or three nodes each phase, on
// spot and on-demand, consolidates at once, replaces at most two nodes at a time, and expires
// nodes after chaosDayExpireAfter of Tailor's clock.
func chaosDayPool() *karpv1.NodePool {
	np := env.ConsolidatingPool("default", karpv1.Budget{Nodes: "2"})
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceSize, Operator: corev1.NodeSelectorOpIn, Values: []string{"large"}},
		karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
		karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand}})
	np.Spec.Template.Spec.ExpireAfter = karpv1.NewNillableDuration(chaosDayExpireAfter)
	return np
}

// phase acts, restarts Tailor at each of the points as they come, then waits until the fleet has
// settled and the phase's own goal (done: what is still missing) is reached.
func (e *chaosDayEnv) phase(name string, points []restartPoint, act func(), done func() []string) {
	e.T.Helper()
	began := time.Now()
	act()
	for _, p := range points {
		if !e.waitTrigger(p.after, chaosDayTriggerWait) {
			e.T.Logf("%s: %s did not come within %v; restarting anyway", name, p.after, chaosDayTriggerWait)
		}
		time.Sleep(p.delay)
		e.restart(fmt.Sprintf("%s, %v after %s", name, p.delay, p.after))
	}
	var faults []string
	for deadline := time.Now().Add(chaosDaySettle); ; time.Sleep(100 * time.Millisecond) {
		faults = e.chaosDayFaults(chaosDayApp)
		if done != nil {
			faults = append(faults, done()...)
		}
		if len(faults) == 0 {
			break
		}
		if time.Now().After(deadline) {
			e.T.Logf("the fleet when %s gave up settling:\n%s", name, e.describeFleet())
			e.T.Fatalf("%s did not settle within %v: %s", name, chaosDaySettle, strings.Join(faults, "; "))
		}
	}
	e.T.Logf("%s settled %v after it began (%d restarts so far)", name, time.Since(began).Round(100*time.Millisecond), e.restarts.Load())
}

// waitTrigger polls until the trigger's state is seen, or the timeout passes.
func (e *chaosDayEnv) waitTrigger(tr trigger, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if e.triggered(tr) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func (e *chaosDayEnv) triggered(tr trigger) bool {
	switch tr {
	case atOnce:
		return true
	case nodeDisrupted:
		nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for i := range nodes.Items {
			if nodetaint.IsDisrupted(&nodes.Items[i]) {
				return true
			}
		}
		return false
	}
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, c := range claims.Items {
		switch {
		case tr == claimDeleting && c.DeletionTimestamp != nil:
			return true
		case tr == claimLaunching && c.DeletionTimestamp == nil && !c.IsTrue(karpv1.ConditionTypeInitialized):
			return true
		}
	}
	return false
}

// tagNodeClass sets a tag on EC2NodeClass default, which changes what its instances are launched
// with and so drifts them; it returns the class as written.
func (e *chaosDayEnv) tagNodeClass(key, value string) *awsv1.EC2NodeClass {
	e.T.Helper()
	var out *awsv1.EC2NodeClass
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		nc, err := e.Cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.Ctx, "default", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if nc.Spec.Tags == nil {
			nc.Spec.Tags = map[string]string{}
		}
		nc.Spec.Tags[key] = value
		out, err = e.Cluster.Tailor.AWSV1().EC2NodeClasses().Update(e.Ctx, nc, metav1.UpdateOptions{})
		return err
	}); err != nil {
		e.T.Fatalf("tagging EC2NodeClass default: %v", err)
	}
	return out
}

// driftedClaims lists the NodeClaims not launched from the class as it is now.
func (e *chaosDayEnv) driftedClaims(class *awsv1.EC2NodeClass) []string {
	want := tailoraws.NodeClassHash(class)
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, c := range claims.Items {
		if c.Annotations[awsv1.AnnotationEC2NodeClassHash] != want {
			out = append(out, fmt.Sprintf("NodeClaim %s was launched from the class before the change", c.Name))
		}
	}
	return out
}

// interruptSpotNodes sends spot interruption warnings for up to n of the spot nodes, chosen by
// rng, and returns their provider IDs.
func (e *chaosDayEnv) interruptSpotNodes(rng *rand.Rand, n int) []string {
	var spot []string
	for _, node := range e.readyNodes() {
		if node.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot {
			spot = append(spot, node.Spec.ProviderID)
		}
	}
	rng.Shuffle(len(spot), func(i, j int) { spot[i], spot[j] = spot[j], spot[i] })
	victims := spot[:min(n, len(spot))]
	e.T.Logf("spot interruption warnings for %d of %d spot nodes: %v", len(victims), len(spot), victims)
	for _, id := range victims {
		e.sendSpotNotice(id)
	}
	return victims
}

// stillRunning lists the instances of providerIDs that the emulator still runs.
func (e *chaosDayEnv) stillRunning(providerIDs []string) []string {
	var out []string
	for _, inst := range e.emu.Instances() {
		for _, id := range providerIDs {
			if inst.ProviderID() == id && inst.State != "terminated" {
				out = append(out, "interrupted instance "+inst.ID+" still runs")
			}
		}
	}
	return out
}

// claimNames lists the NodeClaims there are now.
func (e *chaosDayEnv) claimNames() []string {
	e.T.Helper()
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	var out []string
	for _, c := range claims.Items {
		out = append(out, c.Name)
	}
	return out
}

// stillClaimed lists which of names are still NodeClaims.
func (e *chaosDayEnv) stillClaimed(names []string) []string {
	var out []string
	for _, name := range names {
		if _, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().Get(e.Ctx, name, metav1.GetOptions{}); err == nil {
			out = append(out, "expired NodeClaim "+name+" is still there")
		}
	}
	return out
}

func prefixed(prefix string, items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = prefix + s
	}
	return out
}
