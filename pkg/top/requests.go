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
	pods map[types.UID]podRequests
	// gen counts builds; an entry not met in the latest one is a pod that is gone.
	gen uint64
}

type podRequests struct {
	version          string
	cpuMilli, memory int64
	gen              uint64
}

// NewRequests is an empty memo; a nil *Requests reads every pod afresh.
func NewRequests() *Requests { return &Requests{pods: map[types.UID]podRequests{}} }

func (r *Requests) of(p *corev1.Pod) (cpuMilli, memory int64) {
	if r == nil || p.UID == "" {
		req := scheduling.PodRequests(p)
		return req.Cpu().MilliValue(), req.Memory().Value()
	}
	have, ok := r.pods[p.UID]
	if !ok || have.version != p.ResourceVersion {
		req := scheduling.PodRequests(p)
		have = podRequests{version: p.ResourceVersion, cpuMilli: req.Cpu().MilliValue(), memory: req.Memory().Value()}
	}
	have.gen = r.gen
	r.pods[p.UID] = have
	return have.cpuMilli, have.memory
}

// sweep forgets the pods this build did not meet, and starts the next build.
func (r *Requests) sweep() {
	if r == nil {
		return
	}
	for uid, v := range r.pods {
		if v.gen != r.gen {
			delete(r.pods, uid)
		}
	}
	r.gen++
}
