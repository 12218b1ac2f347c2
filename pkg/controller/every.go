package controller

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Every calls fn every interval, on clk's ticker, until ctx ends: the loops that look at the
// cluster now and then because no event says when something changed.
func Every(ctx context.Context, clk clock.WithTicker, interval time.Duration, fn func()) {
	t := clk.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			fn()
		}
	}
}
