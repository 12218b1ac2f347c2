package fake

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

var _ cloud.InterruptionSource = (*Provider)(nil)

// InjectInterruption sends a notice about an instance, as a cloud's notification queue would.
// Unless it is a rebalance recommendation, the cloud also keeps its word: at the deadline the
// instance is terminated if it still runs, whatever Tailor has done by then (see Reclaimed).
func (p *Provider) InjectInterruption(n cloud.Interruption) {
	p.notices <- n
	if n.Kind == cloud.InterruptionRebalance || n.Deadline.IsZero() {
		return
	}
	go func() {
		<-p.clock.After(n.Deadline.Sub(p.clock.Now()))
		p.mu.Lock()
		defer p.mu.Unlock()
		if inst, ok := p.instances[n.ProviderID]; ok {
			delete(p.instances, n.ProviderID)
			delete(p.byClaim, idempotencyKey(inst.Claim))
			p.reclaimed = append(p.reclaimed, n.ProviderID)
		}
	}()
}

// Reclaimed lists the instances the cloud took away at an interruption's deadline because they
// were still running then.
func (p *Provider) Reclaimed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.reclaimed...)
}

// HandleInterruptions implements cloud.InterruptionSource. Notices are handled concurrently, and
// one whose handler fails is delivered again a second later, as a queue redelivers a message that
// was not deleted.
func (p *Provider) HandleInterruptions(ctx context.Context, handle cloud.InterruptionHandler) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-p.notices:
			go p.deliver(ctx, n, handle)
		}
	}
}

func (p *Provider) deliver(ctx context.Context, n cloud.Interruption, handle cloud.InterruptionHandler) {
	for ctx.Err() == nil {
		err := handle(ctx, n)
		if err == nil {
			return
		}
		klog.FromContext(ctx).Error(err, "Handling an interruption notice failed; delivering it again", "providerID", n.ProviderID, "kind", n.Kind)
		select {
		case <-ctx.Done():
		case <-p.clock.After(time.Second):
		}
	}
}
