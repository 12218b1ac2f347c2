package top

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Requests remembers each pod's cpu and memory requests by UID and resourceVersion. Reading a
// pod's requests as the scheduler does (init containers, sidecars, overhead, pod-level
// resources) allocates; on a 50,000-pod cluster it was most of a rebuild, while a watch event
// changes a handful of pods. A resized pod has a new resourceVersion, so it is read again.
type Requests struct {
	seen map[types.UID]podRequests
	next map[types.UID]podRequests
}

type podRequests struct {
	version          string
	cpuMilli, memory int64
}

// NewRequests is an empty memo; a nil *Requests reads every pod afresh.
func NewRequests() *Requests { return &Requests{seen: map[types.UID]podRequests{}} }

func (r *Requests) of(p *corev1.Pod) (cpuMilli, memory int64) {
	if r != nil {
		if have, ok := r.seen[p.UID]; ok && have.version == p.ResourceVersion && p.UID != "" {
			r.keep(p.UID, have)
			return have.cpuMilli, have.memory
		}
	}
	req := scheduling.PodRequests(p)
	got := podRequests{version: p.ResourceVersion, cpuMilli: req.Cpu().MilliValue(), memory: req.Memory().Value()}
	if r != nil && p.UID != "" {
		r.keep(p.UID, got)
	}
	return got.cpuMilli, got.memory
}

func (r *Requests) keep(uid types.UID, v podRequests) {
	if r.next == nil {
		r.next = make(map[types.UID]podRequests, len(r.seen))
	}
	r.next[uid] = v
}

// sweep forgets the pods a build did not meet: they are gone.
func (r *Requests) sweep() {
	if r == nil {
		return
	}
	if r.next == nil {
		r.next = map[types.UID]podRequests{}
	}
	r.seen, r.next = r.next, nil
}
