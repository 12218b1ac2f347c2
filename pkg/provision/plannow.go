package provision

import "context"

// PlanNow asks for a plan and returns once a planning pass that began after the call has
// finished, with that pass's error. A caller that is about to drain a node taints it first and
// then calls PlanNow, so that capacity for the node's pods is already on its way when they are
// evicted, rather than planned one replacement pod at a time afterwards.
func (p *Provisioner) PlanNow(ctx context.Context) error {
	done := make(chan error, 1)
	p.mu.Lock()
	p.waiters = append(p.waiters, done)
	p.mu.Unlock()
	p.batcher.Soon()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// takeWaiters hands the pass about to begin the PlanNow calls it will answer. Calls made after
// this wait for the next pass, which their own trigger guarantees.
func (p *Provisioner) takeWaiters() []chan error {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.waiters
	p.waiters = nil
	return w
}

func answer(waiters []chan error, err error) {
	for _, w := range waiters {
		w <- err
	}
}
