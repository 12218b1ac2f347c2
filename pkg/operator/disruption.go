package operator

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/disruption"
	clientset "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
	"github.com/tailor-sh/tailor/pkg/plugins/tailor"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// voluntary are the disruption loop and the controller that tells it which nodes have been
// quiet for their consolidateAfter.
type voluntary struct {
	consolidatable *disruption.Consolidatable
	loop           *disruption.Controller
	opts           disruption.Options
}

// attachDisruption builds the disruption loop; call it from Attach, after the provisioner. Its
// planner is built in Start, once the profile is known.
func (o *Operator) attachDisruption(h fwk.Handle, clients clientset.Interface) error {
	v := &o.voluntary
	factory := h.SharedInformerFactory()
	claimLister, poolLister := o.claimLister, o.poolLister
	v.opts = disruption.Options{
		Kube:             h.ClientSet(),
		NodeClaims:       clients.KarpenterV1().NodeClaims(),
		ClaimLister:      claimLister,
		PoolLister:       poolLister,
		Nodes:            factory.Core().V1().Nodes().Lister(),
		Pods:             o.bookedPods(h),
		PDBs:             factory.Policy().V1().PodDisruptionBudgets().Lister(),
		DaemonSets:       factory.Apps().V1().DaemonSets().Lister(),
		Cloud:            o.cloud,
		Gate:             o.provisioner,
		Recorder:         h.EventRecorder(),
		Clock:            o.clock,
		ValidationPeriod: o.args.ConsolidationValidationPeriod.Duration,
		PollInterval:     o.args.DisruptionPollInterval.Duration,
		SpotToSpotMin:    int(*o.args.SpotToSpotMinInstanceTypes),
		PodGroups:        podGroups(h),
		Pools:            o.pools,
	}
	var err error
	v.consolidatable, err = disruption.NewConsolidatable(disruption.ConsolidatableOptions{
		NodeClaims:  clients.KarpenterV1().NodeClaims(),
		ClaimLister: claimLister,
		PoolLister:  poolLister,
		ClaimInform: o.claimInform,
		PodInform:   factory.Core().V1().Pods().Informer(),
		Clock:       o.clock,
		Changed:     func() { o.triggerDisruption() },
	})
	if err != nil {
		return err
	}
	_, err = o.poolInform.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if np, ok := obj.(*karpv1.NodePool); ok {
				v.consolidatable.PoolChanged(np.Name)
			}
		},
	})
	return err
}

func (o *Operator) triggerDisruption() {
	o.mu.Lock()
	loop := o.voluntary.loop
	o.mu.Unlock()
	if loop != nil {
		loop.Trigger()
	}
}

// buildDisruption builds the loop on a simulator of its own (planners are not safe for concurrent
// use) from the same profile, so it asks the same Filter plugins as the scheduler. Call it before
// the informer factory starts, since the simulator's plugins register informers.
func (o *Operator) buildDisruption(ctx context.Context, h fwk.Handle, profile *config.KubeSchedulerProfile, parallelism int) error {
	sim, err := simulation.New(ctx, profile, simulation.DepsFromHandle(h, parallelism), tailor.Name)
	if err != nil {
		return err
	}
	opts := o.voluntary.opts
	pl := planner.NewPlanner(sim)
	pl.SetMinValuesPolicy(planner.MinValuesPolicy(o.args.MinValuesPolicy))
	opts.Planner = pl
	// The drains' re-checks plan on a simulator of their own, beside the loop's probes.
	checkSim, err := simulation.New(ctx, profile, simulation.DepsFromHandle(h, parallelism), tailor.Name)
	if err != nil {
		return err
	}
	checker := planner.NewPlanner(checkSim)
	checker.SetMinValuesPolicy(planner.MinValuesPolicy(o.args.MinValuesPolicy))
	opts.CheckPlanner = checker
	loop := disruption.New(opts)
	o.mu.Lock()
	o.voluntary.loop = loop
	o.mu.Unlock()
	return nil
}

// runDisruption runs the loop and its controller until ctx ends; call it once the informers
// have synced.
func (o *Operator) runDisruption(ctx context.Context) {
	o.wg.Go(func() { o.voluntary.consolidatable.Run(ctx) })
	o.wg.Go(func() { o.voluntary.loop.Run(ctx) })
}

// placer re-checks a drain's evictions with the disruption loop (see termination.Placer), once
// the loop is built; until then it holds nothing.
type placer struct{ o *Operator }

func (p placer) Unplaceable(ctx context.Context, node string, pods []*corev1.Pod) (map[types.UID]string, error) {
	p.o.mu.Lock()
	loop := p.o.voluntary.loop
	p.o.mu.Unlock()
	if loop == nil {
		return nil, nil
	}
	return loop.Unplaceable(ctx, node, pods)
}
