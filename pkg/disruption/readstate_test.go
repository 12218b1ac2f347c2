package disruption

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision"
)

// ledgerGate is a Gate with an empty ledger and no node closed; reading the state asks it nothing
// else.
type ledgerGate struct{ Gate }

func (ledgerGate) Ledger() provision.Ledger { return provision.Ledger{} }
func (ledgerGate) Closed() []string         { return nil }

// A pass where Tailor launched no node reads no pod: there is no candidate. It still reads the
// nodes and the NodePools with their instance types (its budget metrics); a drain's re-check
// reads the pods whatever the NodeClaims, and a pass does once there is one.
func TestAPassWithoutNodeClaimsReadsNoPod(t *testing.T) {
	index := func() cache.Indexer { return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}) }
	nodes, pods, claims, pools := index(), index(), index(), index()
	mustAdd := func(s cache.Indexer, obj any) {
		t.Helper()
		if err := s.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	mustAdd(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "static"}})
	mustAdd(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "static"}})
	mustAdd(pools, newPool("default"))
	ctl := New(Options{Gate: ledgerGate{}, Clock: clocktesting.NewFakeClock(testNow), Cloud: fake.New(fake.Options{}),
		Nodes: corelisters.NewNodeLister(nodes), Pods: corelisters.NewPodLister(pods),
		PDBs: policylisters.NewPodDisruptionBudgetLister(index()), DaemonSets: appslisters.NewDaemonSetLister(index()),
		ClaimLister: karplisters.NewNodeClaimLister(claims), PoolLister: karplisters.NewNodePoolLister(pools)})
	ctx := context.Background()
	read := func(pass bool) *State {
		t.Helper()
		read := ctl.readState
		if pass {
			read = ctl.readPassState
		}
		s, err := read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := read(true)
	if len(s.Pods) != 0 || len(s.Nodes) != 1 || s.Pools["default"] == nil || len(s.TypesByPool["default"]) == 0 {
		t.Errorf("a pass without NodeClaims read %d pods, %d nodes, pools %v; want no pod, the node and the pool with its types",
			len(s.Pods), len(s.Nodes), s.Pools)
	}
	if s := read(false); len(s.Pods) != 1 {
		t.Errorf("a drain's re-check without NodeClaims read %d pods, want 1", len(s.Pods))
	}
	mustAdd(claims, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
	if s := read(true); len(s.Pods) != 1 || len(s.Claims) != 1 {
		t.Errorf("a pass with a NodeClaim read %d pods and %d claims, want 1 and 1", len(s.Pods), len(s.Claims))
	}
}
