package fake

import (
	"context"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// Delete implements cloud.CloudProvider. A claim whose status never recorded the provider ID (a
// crash between launch and status write) is found through its UID, so it does not leak.
func (p *Provider) Delete(ctx context.Context, claim *karpv1.NodeClaim) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.fault(ctx, StepDelete); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	id := claim.Status.ProviderID
	if id == "" {
		id = p.byClaim[idempotencyKey(claim)]
	}
	inst, ok := p.instances[id]
	if !ok {
		return &cloud.NotFoundError{ProviderID: id}
	}
	delete(p.instances, id)
	for key, pid := range p.byClaim {
		if pid == id {
			delete(p.byClaim, key)
		}
	}
	delete(p.drift, id)
	klog.FromContext(ctx).V(2).Info("terminated fake instance", "providerID", id, "nodeclaim", inst.ClaimName)
	return nil
}

// Get implements cloud.CloudProvider.
func (p *Provider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.fault(ctx, StepGet); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	inst, ok := p.instances[providerID]
	if !ok {
		return nil, &cloud.NotFoundError{ProviderID: providerID}
	}
	return inst.asClaim(), nil
}

// List implements cloud.CloudProvider, ordered by launch.
func (p *Provider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.fault(ctx, StepList); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*karpv1.NodeClaim, 0, len(p.instances))
	for _, inst := range p.sortedInstances() {
		out = append(out, inst.asClaim())
	}
	return out, nil
}

// asClaim rebuilds a claim from what the cloud knows, as Karpenter's AWS provider does from
// instance tags: no spec, and the launch time as creation time so garbage collection can leave
// young instances alone.
func (i *Instance) asClaim() *karpv1.NodeClaim {
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              i.ClaimName,
			Labels:            make(map[string]string, len(i.Claim.Labels)),
			CreationTimestamp: metav1.NewTime(i.LaunchTime),
		},
	}
	for k, v := range i.Claim.Labels {
		claim.Labels[k] = v
	}
	claim.Status.ProviderID = i.ProviderID
	claim.Status.ImageID = ImageID
	claim.Status.Capacity = i.Claim.Status.Capacity.DeepCopy()
	claim.Status.Allocatable = i.Claim.Status.Allocatable.DeepCopy()
	return claim
}

func (p *Provider) sortedInstances() []*Instance {
	out := make([]*Instance, 0, len(p.instances))
	for _, inst := range p.instances {
		out = append(out, inst)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// IsDrifted implements cloud.CloudProvider; only SetDrifted makes an instance drift.
func (p *Provider) IsDrifted(_ context.Context, claim *karpv1.NodeClaim) (cloud.DriftReason, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.drift[claim.Status.ProviderID], nil
}

// SetDrifted makes IsDrifted report reason for the instance; an empty reason clears it.
func (p *Provider) SetDrifted(providerID string, reason cloud.DriftReason) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if reason == "" {
		delete(p.drift, providerID)
		return
	}
	p.drift[providerID] = reason
}

// InjectInsufficientCapacity makes the offerings short of capacity until ClearInsufficientCapacity.
// Like EC2, the cloud does not advertise a shortage: a launch that tries such an offering falls
// back to the next one, and only then does InstanceTypes show it unavailable, for
// cloud.UnavailableTTL.
func (p *Provider) InjectInsufficientCapacity(keys ...cloud.OfferingKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		p.ice[k] = true
	}
}

// ClearInsufficientCapacity makes every offering available again.
func (p *Provider) ClearInsufficientCapacity() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ice = map[cloud.OfferingKey]bool{}
	p.unavailable.Clear()
}

// FailNextCreate makes the next Create return err before doing anything; calls queue up.
func (p *Provider) FailNextCreate(err error) { p.InjectFault(StepCreate, Fault{Err: err}) }

// Instances returns copies of the running instances, ordered by launch.
func (p *Provider) Instances() []Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Instance
	for _, inst := range p.sortedInstances() {
		out = append(out, inst.deepCopy())
	}
	return out
}
