package cloud

import "context"

// Runnable is a loop a cloud provider brings along, such as a status controller for its node
// class or an interruption-queue consumer. Run blocks until ctx ends.
type Runnable interface {
	Run(ctx context.Context) error
}
