package aws

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/klog/v2"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

var _ cloud.InterruptionSource = (*Provider)(nil)

// HandleInterruptions implements cloud.InterruptionSource: it consumes Options.InterruptionQueue
// (or, without one, waits for ctx to end) and hands every notice to handle, which acts on it as
// on any cloud's (pkg/lifecycle/interruption). What is EC2's own stays here: a spot notice marks
// its offering unavailable, so that the replacement, planned at once, goes elsewhere. A message
// leaves the queue only once handle succeeded. Only one consumer runs at a time.
func (p *Provider) HandleInterruptions(ctx context.Context, handle cloud.InterruptionHandler) error {
	if !p.consuming.CompareAndSwap(false, true) {
		klog.FromContext(ctx).V(2).Info("Interruption queue already consumed; not consuming it twice")
		return nil
	}
	defer p.consuming.Store(false)
	// Capacity Blocks end on a schedule that EC2 sends no message about: a watcher turns their
	// end into notices like the queue's. It ends with ctx, before this returns.
	var blocks sync.WaitGroup
	blocks.Go(func() { p.watchCapacityBlocks(ctx, handle) })
	defer blocks.Wait()
	if p.opts.InterruptionQueue == "" {
		<-ctx.Done()
		return nil
	}
	return p.consumeInterruptions(ctx, func(ctx context.Context, ev eventbridge.Event) error {
		return p.handleInterruption(ctx, ev, handle)
	})
}

func (p *Provider) handleInterruption(ctx context.Context, ev eventbridge.Event, handle cloud.InterruptionHandler) error {
	logger := klog.FromContext(ctx).WithValues("kind", ev.Kind, "instance", ev.InstanceID, "eventID", ev.MessageID)
	inst, found, err := p.describeAny(ctx, ev.InstanceID)
	if err != nil {
		return err // kept on the queue: handled once EC2 answers
	}
	if !found {
		logger.Info("Interruption notice for an instance EC2 does not know; ignoring")
		p.told(ctx, ev, "")
		return nil
	}
	pid := providerID(aws.ToString(inst.Placement.AvailabilityZone), ev.InstanceID)
	if ev.Kind == eventbridge.KindSpotInterruption {
		key := cloud.OfferingKey{InstanceType: string(inst.InstanceType), Zone: aws.ToString(inst.Placement.AvailabilityZone),
			CapacityType: karpv1.CapacityTypeSpot}
		p.MarkOfferingUnavailable(key)
		logger.Info("Spot offering marked unavailable after an interruption notice", "instanceType", key.InstanceType, "zone", key.Zone)
	}
	if err := handle(ctx, cloud.Interruption{ProviderID: pid, Kind: cloud.InterruptionKind(ev.Kind), Deadline: ev.Deadline}); err != nil {
		return fmt.Errorf("handling %s for %s: %w", ev.Kind, pid, err)
	}
	p.told(ctx, ev, pid)
	return nil
}

func (p *Provider) told(ctx context.Context, ev eventbridge.Event, pid string) {
	if p.opts.OnInterruption != nil {
		p.opts.OnInterruption(ctx, ev, pid)
	}
}

// describeAny describes the instance in whatever state, terminated included: a notice that the
// instance is shutting down still has to reach its NodeClaim.
func (p *Provider) describeAny(ctx context.Context, id string) (ec2types.Instance, bool, error) {
	out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if isNotFound(err) {
		return ec2types.Instance{}, false, nil
	}
	if err != nil {
		return ec2types.Instance{}, false, fmt.Errorf("describing interrupted instance %s: %w", id, err)
	}
	for _, r := range out.Reservations {
		for _, inst := range r.Instances {
			if inst.Placement != nil {
				return inst, true, nil
			}
		}
	}
	return ec2types.Instance{}, false, nil
}
