package termination

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// recheckCache keeps each node's last placement re-check for placementRetry. A re-check is a
// plan; a drain whose evictions a PodDisruptionBudget refuses retries every second, and without
// the cache each retry would plan again, for every draining node at once. An answer is reused
// only for pods it was asked about: a pod it never weighed is re-checked.
type recheckCache struct {
	mu    sync.Mutex
	nodes map[string]recheck
}

type recheck struct {
	at    time.Time
	asked map[types.UID]bool
	held  map[types.UID]string
}

// recent returns the node's last answer, if it is younger than placementRetry and weighed every
// pod of ask.
func (r *recheckCache) recent(node string, ask []*corev1.Pod, now time.Time) (map[types.UID]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.nodes[node]
	if !ok || now.Sub(last.at) >= placementRetry {
		return nil, false
	}
	for _, p := range ask {
		if !last.asked[p.UID] {
			return nil, false
		}
	}
	return last.held, true
}

// keep records the node's answer, and forgets answers too old to be reused.
func (r *recheckCache) keep(node string, ask []*corev1.Pod, held map[types.UID]string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodes == nil {
		r.nodes = map[string]recheck{}
	}
	for name, last := range r.nodes {
		if now.Sub(last.at) >= placementRetry {
			delete(r.nodes, name)
		}
	}
	asked := make(map[types.UID]bool, len(ask))
	for _, p := range ask {
		asked[p.UID] = true
	}
	r.nodes[node] = recheck{at: now, asked: asked, held: held}
}
