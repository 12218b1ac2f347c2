package interruption

import "sync"

// keyLocks is one mutex per key, made when first asked for and dropped when nobody holds or
// waits for it. keymutex.NewHashed shares a fixed number of mutexes among all keys: with a storm
// of 500 notices in hand, about 120 pairs of different instances shared one, and each waited out
// the other's whole removal (the plan alone takes up to 30 s), past the queue's visibility
// timeout.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	refs int
}

func newKeyLocks() *keyLocks { return &keyLocks{locks: map[string]*keyLock{}} }

// lock takes key's mutex and returns the function that releases it.
func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
