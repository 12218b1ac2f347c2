package operator

import (
	"context"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	clientset "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
	"github.com/tailor-sh/tailor/pkg/lifecycle/drift"
	"github.com/tailor-sh/tailor/pkg/lifecycle/expiration"
	"github.com/tailor-sh/tailor/pkg/lifecycle/forceful"
	"github.com/tailor-sh/tailor/pkg/lifecycle/interruption"
	"github.com/tailor-sh/tailor/pkg/lifecycle/repair"
	"github.com/tailor-sh/tailor/pkg/nodepool/hash"
)

// signals are the controllers that decide a node must go or should be replaced: interruption
// expiration and repair (forceful, not budgeted), drift (only marks; the disruption loop acts on it),
// and the NodePool hash drift is measured against.
type signals struct {
	poolHash     *hash.Controller
	drift        *drift.Controller
	expiration   *expiration.Controller
	interruption *interruption.Controller
	// repair is nil unless the plugin arg nodeRepair is on.
	repair *repair.Controller
}

// attachSignals builds the signal controllers; call it from Attach, after the provisioner.
func (o *Operator) attachSignals(h fwk.Handle, clients clientset.Interface) error {
	s := &o.signals
	claimLister, poolLister := o.claimLister, o.poolLister
	nodeClaims := clients.KarpenterV1().NodeClaims()
	nodes := h.SharedInformerFactory().Core().V1().Nodes().Lister()
	disrupter := forceful.New(forceful.Options{
		Kube:       h.ClientSet(),
		NodeClaims: nodeClaims,
		Nodes:      nodes,
		Pods:       h.SharedInformerFactory().Core().V1().Pods().Lister(),
		Recorder:   h.EventRecorder(),
		Clock:      o.clock,
		PlanNow:    o.provisioner.PlanNow,
	})
	var err error
	if s.poolHash, err = hash.NewController(hash.Options{NodePools: clients.KarpenterV1().NodePools(), NodeClaims: nodeClaims,
		PoolLister: poolLister, ClaimLister: claimLister, PoolInform: o.poolInform, ClaimInform: o.claimInform, Clock: o.clock}); err != nil {
		return err
	}
	if s.drift, err = drift.New(drift.Options{NodeClaims: nodeClaims, ClaimLister: claimLister, PoolLister: poolLister,
		ClaimInform: o.claimInform, PoolInform: o.poolInform, Cloud: o.cloud, Recorder: h.EventRecorder(), Clock: o.clock}); err != nil {
		return err
	}
	if s.expiration, err = expiration.New(expiration.Options{ClaimLister: claimLister, ClaimInform: o.claimInform,
		Clock: o.clock, Disrupter: disrupter}); err != nil {
		return err
	}
	if o.args.NodeRepair {
		if s.repair, err = repair.New(repair.Options{Nodes: nodes, NodeInformer: h.SharedInformerFactory().Core().V1().Nodes().Informer(),
			ClaimLister: claimLister, NodeClaims: nodeClaims, Policies: cloud.RepairPoliciesOf(o.cloud), Disrupter: disrupter,
			Recorder: h.EventRecorder(), Clock: o.clock}); err != nil {
			return err
		}
	}
	s.interruption = interruption.New(interruption.Options{NodeClaims: nodeClaims, ClaimLister: claimLister,
		Nodes: nodes, Recorder: h.EventRecorder(), Disrupter: disrupter, Clock: o.clock})
	// A node class's spec (its hash) or resolved status (images, subnets, security groups) is
	// what cloud drift is measured against: re-check its claims when it changes, rather than at
	// the next periodic look.
	// The informer comes from the operator's factory, which Start starts.
	_, err = o.informers.AWS().V1().EC2NodeClasses().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if nc, ok := obj.(*awsv1.EC2NodeClass); ok {
				s.drift.NodeClassChanged(nc.Name)
			}
		},
		UpdateFunc: func(_, obj any) {
			if nc, ok := obj.(*awsv1.EC2NodeClass); ok {
				s.drift.NodeClassChanged(nc.Name)
			}
		},
	})
	return err
}

// startSignals runs the signal controllers until ctx ends; call it from Start, once the
// informers have synced.
func (o *Operator) startSignals(ctx context.Context) {
	s := &o.signals
	o.wg.Go(func() { s.poolHash.Run(ctx) })
	o.wg.Go(func() { s.drift.Run(ctx) })
	o.wg.Go(func() { s.expiration.Run(ctx) })
	if s.repair != nil {
		o.wg.Go(func() { s.repair.Run(ctx) })
	}
	if src, ok := o.cloud.(cloud.InterruptionSource); ok {
		// In its own goroutine: each removal waits for a plan of the provisioner (PlanNow).
		o.wg.Go(func() { s.interruption.Resume(ctx) })
		o.wg.Go(func() {
			if err := src.HandleInterruptions(ctx, s.interruption.Handle); err != nil && ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "Interruption notices stopped")
			}
		})
	}
}
