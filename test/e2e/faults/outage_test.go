package faults

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// outageLength is how long the API server stays silent: 10 s in make test, TAILOR_OUTAGE
// (e.g. 30s, as make chaos sets it) otherwise.
func outageLength(t *testing.T) time.Duration {
	if v := os.Getenv("TAILOR_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("TAILOR_OUTAGE=%q: %v", v, err)
		}
		return d
	}
	return 10 * time.Second
}

// chaosOnly skips a long fault test unless make chaos runs it (TAILOR_CHAOS=1): make test keeps
// one test per fault.
func chaosOnly(t *testing.T) {
	if os.Getenv("TAILOR_CHAOS") == "" {
		t.Skip("a long variant: make chaos runs it (TAILOR_CHAOS=1)")
	}
}

func newOutageEnv(t *testing.T) *env.Env {
	return env.Start(t, nil, nil, func(o *sandbox.Options) { o.Outages = true })
}

// outage makes the API server stop answering Tailor, the controllers and kwok for d.
func outage(e *env.Env, d time.Duration) {
	e.T.Logf("API server out for %v", d)
	e.Cluster.Outage.Begin()
	time.Sleep(d)
	e.Cluster.Outage.End()
}

// The API server goes silent in the middle of a burst of 30 pods, after the first NodeClaims. Once
// it answers again every pod runs, every node Tailor launched holds one of them (nothing launched
// for pods it could not see bound), the fleet is whole, and when Tailor stops none of its
// goroutines is left behind.
func TestAPIServerOutageDuringABurst(t *testing.T) {
	e := newOutageEnv(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("burst", 30, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the first NodeClaims of the burst", time.Minute, func() (bool, string) {
		claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(claims.Items) > 0, "no NodeClaim yet"
	})
	outage(e, outageLength(t))
	e.WaitRunning("app=burst", 30, 3*time.Minute)
	expectConverged(e, time.Minute)
	expectEveryNodeHolds(e, "app=burst")
	expectTailorGoroutinesEnd(e)
}

// The API server goes silent while a node drains under a PDB: once it answers again, the drain
// finishes, the pods run elsewhere, the budget was never broken, and no goroutine is left.
func TestAPIServerOutageDuringADrain(t *testing.T) {
	chaosOnly(t)
	e := newOutageEnv(t)
	node := e.LaunchOneNode("db", 4)
	e.CreatePDB("db", 1)
	claim := e.ClaimOfNode(node)
	pdb := e.Sample(20*time.Millisecond, func() string {
		if n := e.ReadyPods("app=db"); n >= 0 && n < 3 {
			return fmt.Sprintf("only %d of 4 db pods ready; the PDB allows 1 unavailable", n)
		}
		return ""
	})
	if err := e.Cluster.Tailor.KarpenterV1().NodeClaims().Delete(e.Ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the first eviction", time.Minute, func() (bool, string) {
		return len(e.Events("default", "Evicted")) > 0, "no pod evicted yet"
	})
	outage(e, outageLength(t))
	e.WaitNodeGone(node.Name, 2*time.Minute)
	e.WaitRunning("app=db", 4, 2*time.Minute)
	pdb.Stop(e, "the PodDisruptionBudget")
	if e.InstanceExists(node.Spec.ProviderID) {
		t.Fatalf("instance %s outlived its drained node", node.Spec.ProviderID)
	}
	expectConverged(e, time.Minute)
	expectEveryNodeHolds(e, "app=db")
	expectTailorGoroutinesEnd(e)
}

// tailorPackages are the packages whose goroutines belong to Tailor's scheduler; the sandbox's
// own (kwok, the fake cloud, the controllers) keep running after it stops.
var tailorPackages = []string{"/pkg/operator.", "/pkg/provision.", "/pkg/disruption.", "/pkg/lifecycle", "/pkg/plugins/",
	"/pkg/controller.", "/pkg/simulation.", "/pkg/nodepool/", "/pkg/cloud.", "/pkg/metrics.", "/pkg/aws"}

// expectTailorGoroutinesEnd stops Tailor's scheduler and fails the test if any goroutine running
// Tailor's code outlives it (a leak the outage might have caused: a retry loop that never saw its
// context end, a watch that was never stopped).
func expectTailorGoroutinesEnd(e *env.Env) {
	e.T.Helper()
	if running := tailorGoroutines(); len(running) == 0 {
		e.T.Fatal("no goroutine runs Tailor's code while it runs: the check would see no leak either")
	}
	e.Cluster.StopScheduler()
	var left []string
	e.WaitFor("Tailor's goroutines to end", 10*time.Second, func() (bool, string) {
		left = tailorGoroutines()
		return len(left) == 0, fmt.Sprintf("%d left:\n%s", len(left), strings.Join(left, "\n\n"))
	})
}

func tailorGoroutines() []string {
	// A dump cut short would hide the goroutines past its end: grow the buffer until it fits.
	buf := make([]byte, 1<<22)
	for n := runtime.Stack(buf, true); ; n = runtime.Stack(buf, true) {
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, pkg := range tailorPackages {
			if strings.Contains(g, "github.com/tailor-sh/tailor"+pkg) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}
