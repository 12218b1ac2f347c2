package e2e

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/sandbox"
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

func newOutageEnv(t *testing.T) *env {
	return startEnv(t, nil, nil, func(o *sandbox.Options) { o.Outages = true })
}

// outage makes the API server stop answering Tailor, the controllers and kwok for d.
func (e *env) outage(d time.Duration) {
	e.t.Logf("API server out for %v", d)
	e.cluster.Outage.Begin()
	time.Sleep(d)
	e.cluster.Outage.End()
}

// The API server goes silent in the middle of a burst of 30 pods, after the first NodeClaims. Once
// it answers again every pod runs, every node Tailor launched holds one of them (nothing launched
// for pods it could not see bound), the fleet is whole, and when Tailor stops none of its
// goroutines is left behind.
func TestAPIServerOutageDuringABurst(t *testing.T) {
	e := newOutageEnv(t)
	e.applyExample("ec2nodeclass.yaml")
	e.applyExample("nodepool.yaml")
	if _, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, deploymentOf("burst", 30, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the first NodeClaims of the burst", time.Minute, func() (bool, string) {
		claims, err := e.cluster.Tailor.KarpenterV1().NodeClaims().List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(claims.Items) > 0, "no NodeClaim yet"
	})
	e.outage(outageLength(t))
	e.waitRunning("app=burst", 30, 3*time.Minute)
	e.expectConverged(time.Minute)
	e.expectEveryNodeHolds("app=burst")
	e.expectTailorGoroutinesEnd()
}

// The API server goes silent while a node drains under a PDB: once it answers again, the drain
// finishes, the pods run elsewhere, the budget was never broken, and no goroutine is left.
func TestAPIServerOutageDuringADrain(t *testing.T) {
	chaosOnly(t)
	e := newOutageEnv(t)
	node := e.launchOneNode("db", 4)
	e.createPDB("db", 1)
	claim := e.claimOfNode(node)
	pdb := e.sample(20*time.Millisecond, func() string {
		if n := e.readyPods("app=db"); n >= 0 && n < 3 {
			return fmt.Sprintf("only %d of 4 db pods ready; the PDB allows 1 unavailable", n)
		}
		return ""
	})
	if err := e.cluster.Tailor.KarpenterV1().NodeClaims().Delete(e.ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the first eviction", time.Minute, func() (bool, string) {
		return len(e.events("default", "Evicted")) > 0, "no pod evicted yet"
	})
	e.outage(outageLength(t))
	e.waitNodeGone(node.Name, 2*time.Minute)
	e.waitRunning("app=db", 4, 2*time.Minute)
	pdb.Stop(e, "the PodDisruptionBudget")
	if e.instanceExists(node.Spec.ProviderID) {
		t.Fatalf("instance %s outlived its drained node", node.Spec.ProviderID)
	}
	e.expectConverged(time.Minute)
	e.expectEveryNodeHolds("app=db")
	e.expectTailorGoroutinesEnd()
}

// tailorPackages are the packages whose goroutines belong to Tailor's scheduler; the sandbox's
// own (kwok, the fake cloud, the controllers) keep running after it stops.
var tailorPackages = []string{"/pkg/operator.", "/pkg/provision.", "/pkg/disruption.", "/pkg/lifecycle", "/pkg/plugins/",
	"/pkg/controller.", "/pkg/simulation.", "/pkg/nodepool/", "/pkg/cloud.", "/pkg/metrics.", "/pkg/aws"}

// expectTailorGoroutinesEnd stops Tailor's scheduler and fails the test if any goroutine running
// Tailor's code outlives it (a leak the outage might have caused: a retry loop that never saw its
// context end, a watch that was never stopped).
func (e *env) expectTailorGoroutinesEnd() {
	e.t.Helper()
	if running := tailorGoroutines(); len(running) == 0 {
		e.t.Fatal("no goroutine runs Tailor's code while it runs: the check would see no leak either")
	}
	e.cluster.StopScheduler()
	var left []string
	e.waitFor("Tailor's goroutines to end", 10*time.Second, func() (bool, string) {
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
