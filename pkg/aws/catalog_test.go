package aws_test

import (
	"context"
	"testing"
	"time"

	"github.com/tailor-sh/tailor/pkg/aws/emulator"
)

// TestCatalogRefresh re-reads the catalog only after 12 hours of the injected clock.
func TestCatalogRefresh(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	read := func() int {
		if _, err := e.provider.InstanceTypes(ctx, pool()); err != nil {
			t.Fatal(err)
		}
		return e.emu.Calls("DescribeInstanceTypes")
	}
	first := read()
	e.clock.Step(11 * time.Hour)
	if got := read(); got != first {
		t.Errorf("catalog re-read after 11h (%d calls, then %d)", first, got)
	}
	e.clock.Step(time.Hour)
	if got := read(); got <= first {
		t.Errorf("catalog not re-read after 12h")
	}
}
