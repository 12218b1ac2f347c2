package fake

import "context"

// Step names a point in the provider where a test can inject a fault.
type Step string

// The steps that take faults.
const (
	// StepCreate is the start of Create, before anything is launched.
	StepCreate Step = "Create"
	// StepAfterLaunch is inside Create once the instance runs, before Create returns: the window in
	// which a crash leaves an instance its caller never heard of.
	StepAfterLaunch Step = "AfterLaunch"
	StepDelete      Step = "Delete"
	StepGet         Step = "Get"
	StepList        Step = "List"
)

// Fault is what happens the next time a step is reached: the call returns Err, or, with Hang,
// blocks until its context ends and returns the context's error.
type Fault struct {
	Err  error
	Hang bool
}

// InjectFault arms a one-shot fault at step; faults at the same step queue up.
func (p *Provider) InjectFault(step Step, f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[step] = append(p.faults[step], f)
}

// fault fires the next fault armed at step, if any. It must be called without p.mu held, since a
// hanging call must not block the rest of the cloud.
func (p *Provider) fault(ctx context.Context, step Step) error {
	p.mu.Lock()
	queue := p.faults[step]
	if len(queue) == 0 {
		p.mu.Unlock()
		return nil
	}
	f := queue[0]
	p.faults[step] = queue[1:]
	p.mu.Unlock()
	if f.Hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return f.Err
}
