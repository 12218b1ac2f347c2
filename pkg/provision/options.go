package provision

import (
	"time"

	schedulinglisters "k8s.io/client-go/listers/scheduling/v1alpha2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	"github.com/tailor-sh/tailor/pkg/cloud"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/batch"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// ResyncInterval is how often the provisioner looks at pending pods without being asked, as
// Karpenter's pod controller requeues them.
const ResyncInterval = 10 * time.Second

// NudgeGap is the least time between the close of a batch and that of the next one when only a
// nudge (a status write, a resync, a claim's node named) opened it: a binding or refusal storm
// otherwise asks for a round every few tens of milliseconds.
const NudgeGap = time.Second

// Options are what a Provisioner reads and writes.
type Options struct {
	SchedulerName string
	Kube          kubernetes.Interface
	NodeClaims    karpclient.NodeClaimInterface
	ClaimLister   karplisters.NodeClaimLister
	// ClaimsSeenUpTo is the resource version the NodeClaim informer has seen up to (its
	// LastSyncResourceVersion): a claim this process created is counted until the informer is
	// past its creation (see createdClaim.gone). Nil: for createdTTL.
	ClaimsSeenUpTo func() string
	PoolLister     karplisters.NodePoolLister
	Pods           corelisters.PodLister
	Nodes          corelisters.NodeLister
	DaemonSets     appslisters.DaemonSetLister
	Cloud          cloud.CloudProvider
	Recorder       events.EventRecorder
	Clock          clock.WithTicker
	BatchIdle      time.Duration
	BatchMax       time.Duration
	// StrandedAfter is how long a pod may stay pending beside the node a plan put it on, once
	// that node is up (see checkStranded); 0 means DefaultStrandedAfter.
	StrandedAfter time.Duration
	// GiveBackAfter is how long a NodeClaim this process launched may go unneeded before it is
	// deleted (see unneededClaims); 0 means DefaultGiveBackAfter, negative never.
	GiveBackAfter time.Duration
	// Activate moves pods back to the scheduler's active queue (the framework handle's
	// Activate); may be nil.
	Activate func(pods map[string]*corev1.Pod)
	// Backoff holds NodePools back after a permanent launch failure; may be nil.
	Backoff *cloud.LaunchBackoff
	// PodGroups are the scheduler's PodGroups, read for gang policies; nil when gang scheduling
	// is off, and then a PodGroup's pods are planned one by one like any other.
	PodGroups schedulinglisters.PodGroupLister
	// GangCompletionTimeout is how long a gang may stay short of its minCount, with capacity
	// planned for some of its pods, before that capacity is given back; 0 means never.
	GangCompletionTimeout time.Duration
	// Destined maps pending pods to a node that room was kept on for them (a ProvisioningRequest's
	// booking, for the pods that consume it), which plans try first; may be nil.
	Destined func(pending []*corev1.Pod) map[types.UID]string
	// Pools keeps the NodePools' offerings from round to round; the operator shares one with the
	// disruption loop. Nil: a cache of the provisioner's own.
	Pools *planner.PoolCache
}

// New returns a Provisioner; it plans once Run is called.
func New(opts Options) *Provisioner {
	if opts.Pools == nil {
		opts.Pools = &planner.PoolCache{}
	}
	return &Provisioner{
		opts:     opts,
		batcher:  batch.New(opts.Clock, opts.BatchIdle, opts.BatchMax, NudgeGap),
		enqueued: map[types.UID]bool{},
		planned:  map[types.UID]string{},
		assumed:  map[types.UID]string{},
		closed:   map[string]bool{},
		refused:  map[string]map[string]*corev1.Pod{},
		awaited:  map[string]time.Time{},
		written:  map[types.UID]uint64{},

		nominations: map[types.UID]string{},
		admitted:    map[types.UID]string{},
		created:     map[string]createdClaim{},
		destined:    map[types.UID]destination{},
		reserved:    map[types.UID]reservedPlan{},
		told:        map[types.UID]map[string]string{},

		awaitedNodes: map[string]time.Time{},

		headed:       map[types.UID]heading{},
		podKeys:      map[types.UID]string{},
		stranded:     map[types.UID]bool{},
		launchedHere: map[string]time.Time{},
		landed:       map[string]int{},
		unused:       map[string]bool{},
		wantedAt:     map[string]time.Time{},
		givenBack:    map[string]bool{},
		gangReleased: map[string]releasedForGang{},
		refusals:     map[types.UID]*refusals{},
		woken:        map[types.UID]string{},
		holdLapsed:   map[string]bool{},
		gated:        map[types.UID]bool{},
		keptBy:       map[types.UID]keptPod{},
		needing:      map[types.UID]need{},
		forced:       true, // the first round looks at pods pending from before this process
	}
}
