package tailor

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// plans is a Capacity that knows only plans, and counts how often they are looked up.
type plans struct {
	planned map[types.UID]string
	lookups int
	// kept is the room kept on nodes, for every pod alike.
	kept map[string][]scheduling.Kept
}

func (c *plans) KeptRoom(*corev1.Pod) map[string][]scheduling.Kept { return c.kept }

func (c *plans) Enqueue(*corev1.Pod)                             {}
func (c *plans) Rejected(*corev1.Pod, func(string) *corev1.Node) {}
func (c *plans) NominatedNode(*corev1.Pod) (string, bool)        { return "", false }
func (c *plans) Reserve(*corev1.Pod, string) bool                { return true }
func (c *plans) Unreserve(*corev1.Pod, string)                   {}
func (c *plans) HeldFor(*corev1.Pod) (string, bool)              { return "", false }
func (c *plans) Gate(*corev1.Pod) (string, bool)                 { return "", false }
func (c *plans) PlannedNode(pod *corev1.Pod) (string, bool) {
	c.lookups++
	n, ok := c.planned[pod.UID]
	return n, ok
}

func nodeInfo(name string) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return ni
}

func TestPreScoreLooksUpThePlanOnceAndScoreRanksThePlannedNode(t *testing.T) {
	nodes := []fwk.NodeInfo{nodeInfo("a"), nodeInfo("b"), nodeInfo("c")}
	for _, tc := range []struct {
		name string
		// planned is the pod's planned node; "" means it has no plan.
		planned string
		// preScore is whether the configuration enables PreScore.
		preScore    bool
		wantSkip    bool
		wantScores  []int64
		wantLookups int
	}{
		{name: "no plan: Score is skipped after one lookup", preScore: true, wantSkip: true, wantLookups: 1},
		{name: "planned onto b", planned: "b", preScore: true, wantScores: []int64{0, fwk.MaxScore, 0}, wantLookups: 1},
		{name: "planned onto b, Score without PreScore", planned: "b", wantScores: []int64{0, fwk.MaxScore, 0}, wantLookups: 3},
		{name: "no plan, Score without PreScore", wantScores: []int64{0, 0, 0}, wantLookups: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "uid-p"}}
			capacity := &plans{planned: map[types.UID]string{}}
			if tc.planned != "" {
				capacity.planned[pod.UID] = tc.planned
			}
			p := &Plugin{capacity: capacity}
			state := framework.NewCycleState()
			if tc.preScore {
				st := p.PreScore(context.Background(), state, pod, nodes)
				if got := st.IsSkip(); got != tc.wantSkip {
					t.Fatalf("PreScore skip = %v (%v), want %v", got, st, tc.wantSkip)
				}
			}
			if !tc.wantSkip {
				for i, n := range nodes {
					score, st := p.Score(context.Background(), state, pod, n)
					if !st.IsSuccess() {
						t.Fatalf("Score on %s: %v", n.Node().Name, st)
					}
					if score != tc.wantScores[i] {
						t.Errorf("Score on %s = %d, want %d", n.Node().Name, score, tc.wantScores[i])
					}
				}
			}
			if capacity.lookups != tc.wantLookups {
				t.Errorf("the plan was looked up %d times, want %d", capacity.lookups, tc.wantLookups)
			}
		})
	}
}

// holds is a Capacity whose pods wait for the node in held, if any.
type holds struct {
	plans
	held map[types.UID]string
}

func (c *holds) HeldFor(pod *corev1.Pod) (string, bool) {
	n, ok := c.held[pod.UID]
	return n, ok
}

func (c *holds) Gate(pod *corev1.Pod) (string, bool) { return c.HeldFor(pod) }

func TestAHeldPodTakesOnlyTheNodeLaunchedForIt(t *testing.T) {
	nodes := []fwk.NodeInfo{nodeInfo("ready-a"), nodeInfo("launched-b")}
	held := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "held", UID: "uid-held"}}
	free := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "free", UID: "uid-free"}}
	p := &Plugin{capacity: &holds{held: map[types.UID]string{held.UID: "launched-b"}}}

	state := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), state, free, nodes); !st.IsSkip() {
		t.Fatalf("PreFilter for a pod that waits for nothing = %v, want Skip", st)
	}

	state = framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), state, held, nodes); !st.IsSuccess() {
		t.Fatalf("PreFilter for a held pod = %v, want Success", st)
	}
	if st := p.Filter(context.Background(), state, held, nodes[0]); st.Code() != fwk.UnschedulableAndUnresolvable || st.Message() != waitsMessage {
		t.Errorf("Filter on the node that is not the held pod's = %v, want UnschedulableAndUnresolvable: %s", st, waitsMessage)
	}
	if st := p.Filter(context.Background(), state, held, nodes[1]); !st.IsSuccess() {
		t.Errorf("Filter on the node launched for the held pod = %v, want Success", st)
	}
}

// A held pod is woken by an event about its own node, or by any node event once it waits for
// nothing; the events of other nodes leave it alone.
func TestAHeldPodIsWokenByItsOwnNode(t *testing.T) {
	held := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "held", UID: "uid-held"}}
	free := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "free", UID: "uid-free"}}
	p := &Plugin{capacity: &holds{held: map[types.UID]string{held.UID: "launched-b"}}}
	events, err := p.EventsToRegister(context.Background())
	if err != nil || len(events) != 1 || events[0].Event.Resource != fwk.Node {
		t.Fatalf("EventsToRegister = %v, %v; want node events", events, err)
	}
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	for _, tc := range []struct {
		pod  *corev1.Pod
		node *corev1.Node
		want fwk.QueueingHint
	}{
		{held, node("launched-b"), fwk.Queue},
		{held, node("ready-a"), fwk.QueueSkip},
		{free, node("ready-a"), fwk.Queue},
	} {
		got, err := events[0].QueueingHintFn(klog.Background(), tc.pod, nil, tc.node)
		if err != nil || got != tc.want {
			t.Errorf("hint for %s on an event of %s = %v, %v; want %v", tc.pod.Name, tc.node.Name, got, err, tc.want)
		}
	}
}

// rejections is a Capacity that records, for each rejected pod, which of the nodes asked about
// the cycle refused it on.
type rejections struct {
	plans
	asked   []string
	refused map[string]bool
}

func (c *rejections) Rejected(_ *corev1.Pod, refusedOn func(string) *corev1.Node) {
	for _, n := range c.asked {
		node := refusedOn(n)
		c.refused[n] = node != nil && node.Name == n
	}
}

// PostFilter tells the provisioner the pod was rejected, and on which nodes: those the cycle had
// and a plugin other than Tailor's turned the pod away from. Tailor's own Filter, holding the pod
// for another node, refuses it nothing; a node not in the snapshot was not asked.
func TestPostFilterSaysWhichNodesRefusedThePod(t *testing.T) {
	capacity := &rejections{asked: []string{"full", "held-away", "absent", "not-yet"}, refused: map[string]bool{}}
	var nodes []*corev1.Node
	for _, n := range []string{"full", "held-away", "absent"} {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	p := &Plugin{capacity: capacity, snapshot: cache.NewSnapshot(nil, nodes)}
	statuses := framework.NewDefaultNodeToStatus()
	statuses.Set("full", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin("NodeResourcesFit"))
	statuses.Set("held-away", fwk.NewStatus(fwk.UnschedulableAndUnresolvable, waitsMessage).WithPlugin(Name))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "uid-p"}}
	if _, status := p.PostFilter(context.Background(), framework.NewCycleState(), pod, statuses); status.IsSuccess() {
		t.Fatal("PostFilter succeeded for a pod with no capacity on its way")
	}
	want := map[string]bool{"full": true, "held-away": false, "absent": true, "not-yet": false}
	for n, w := range want {
		if capacity.refused[n] != w {
			t.Errorf("refused on %s: %v, want %v", n, capacity.refused[n], w)
		}
	}
}
