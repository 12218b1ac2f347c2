package faults

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// trigger is a state of the fleet a restart waits for, so that restarts land in the middle of
// the work each phase starts rather than only before or after it.
type trigger string

const (
	atOnce         trigger = "the phase's start"
	claimLaunching trigger = "a NodeClaim launching"
	nodeDisrupted  trigger = "a node tainted karpenter.sh/disrupted"
	claimDeleting  trigger = "a NodeClaim being deleted"
)

// restartPoint is one restart: once after is seen, and delay more.
type restartPoint struct {
	after trigger
	delay time.Duration
}

// chaosDayPhases name the day's phases in order, with the states worth a restart in each.
var chaosDayPhases = []struct {
	name     string
	triggers []trigger
}{
	{"scale-up", []trigger{atOnce, claimLaunching}},
	{"drift", []trigger{atOnce, claimLaunching, nodeDisrupted, claimDeleting}},
	{"consolidation", []trigger{atOnce, nodeDisrupted, claimDeleting}},
	{"interruption", []trigger{atOnce, nodeDisrupted, claimDeleting, claimLaunching}},
	{"expiration", []trigger{atOnce, claimDeleting, nodeDisrupted, claimLaunching}},
}

// chaosDayPlan is everything a seed decides before the day starts.
type chaosDayPlan struct {
	replicas, scaledTo, interruptions int
	// restarts holds each phase's restart points, in chaosDayPhases' order.
	restarts [][]restartPoint
}

// newChaosDayPlan draws a day from rng: 8-12 replicas (four to six nodes), scaled down to 3 to
// half, 1-2 spot warnings, and one or two restarts a phase, each after one of the phase's
// triggers and up to 1.5 s more.
func newChaosDayPlan(rng *rand.Rand) chaosDayPlan {
	p := chaosDayPlan{replicas: 8 + rng.IntN(5)}
	p.scaledTo = 3 + rng.IntN(p.replicas/2-2)
	p.interruptions = 1 + rng.IntN(2)
	for _, ph := range chaosDayPhases {
		var points []restartPoint
		for range 1 + rng.IntN(2) {
			points = append(points, restartPoint{
				after: ph.triggers[rng.IntN(len(ph.triggers))],
				delay: time.Duration(rng.IntN(1500)) * time.Millisecond,
			})
		}
		p.restarts = append(p.restarts, points)
	}
	return p
}

func (p chaosDayPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d replicas, scaled to %d, %d spot warnings; restarts:", p.replicas, p.scaledTo, p.interruptions)
	for i, ph := range chaosDayPhases {
		var at []string
		for _, r := range p.restarts[i] {
			at = append(at, fmt.Sprintf("%v after %s", r.delay, r.after))
		}
		fmt.Fprintf(&b, " %s [%s]", ph.name, strings.Join(at, ", "))
	}
	return b.String()
}
