package interruption

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// Holding one key's lock keeps out only that key: every other key is taken at once, and the map
// forgets a key nobody holds.
func TestKeyLocksAreOnePerKey(t *testing.T) {
	k := newKeyLocks()
	release := k.lock("i-held")
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		for i := range 2000 {
			wg.Go(func() { k.lock(fmt.Sprintf("i-%d", i))() })
		}
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("other keys waited for a held one")
	}
	waited := make(chan struct{})
	go func() { k.lock("i-held")(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("a held key was taken twice")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	<-waited
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.locks) != 0 {
		t.Errorf("%d keys kept after all were released", len(k.locks))
	}
}
