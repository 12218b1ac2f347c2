package nodepool

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

// Cache keeps each NodePool's prepared offerings (Prepare) from one round of the provisioner to
// the next. Working them out labels every offering of the pool's catalog: with twenty NodePools
// over a region's 1,345 types, a twentieth of what Tailor spent in TestKarpenterShapes, every
// round. A pool's offerings depend on its node template and on its instance types, so the cache
// keeps them while the template is the same (by a hash of it) and the cloud hands out the same
// instance type objects in the same order (the AWS provider keeps them until an offering, a price
// or what the node class resolved to changes; the fake cloud until a launch finds an offering
// short or such a mark lapses). A cloud that builds its types anew each time is prepared anew each
// time, as without the cache.
//
// What it keeps is what a plan builds anyway, kept between rounds: about a kilobyte per offering
// the pool's requirements allow. The provisioner and the disruption loop share one cache (the
// operator builds it), so each pool is prepared once per change for both. A plan only reads a
// prepared pool (its one lazily filled part is locked), so they may use it at once.
type Cache struct {
	mu    sync.Mutex
	calls uint64
	pools map[types.UID]cachedPool
}

type cachedPool struct {
	template uint64
	types    []*cloud.InstanceType
	prepared *poolCatalog
	// asked is the call that last asked for the pool.
	asked uint64
}

// forgetAfter is how many calls may pass without asking for a pool before the cache forgets it.
// Its callers list nearly the same pools (the provisioner leaves out a pool held back after a
// launch failed for good, the disruption loop does not): forgetting at once what one call did
// not list would prepare such a pool anew for the other every time.
const forgetAfter = 16

// Prepare returns pools prepared (see Prepare), each from the cache when its template and types
// are those it was prepared with. NodePools no call has asked for in forgetAfter calls are
// forgotten.
func (c *Cache) Prepare(pools []Pool) []Pool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pools == nil {
		c.pools = map[types.UID]cachedPool{}
	}
	c.calls++
	out := make([]Pool, len(pools))
	for i, p := range pools {
		uid, template := p.NodePool.UID, templateHash(p)
		if cached, ok := c.pools[uid]; ok && uid != "" && cached.template == template && slices.Equal(cached.types, p.InstanceTypes) {
			p.prepared = cached.prepared
			cached.asked = c.calls
			c.pools[uid] = cached
		} else {
			p = Prepare([]Pool{p})[0]
			c.pools[uid] = cachedPool{template: template, types: p.InstanceTypes, prepared: p.prepared, asked: c.calls}
		}
		out[i] = p
	}
	for uid, cached := range c.pools {
		if c.calls-cached.asked >= forgetAfter {
			delete(c.pools, uid)
		}
	}
	return out
}

// templateHash hashes what of the NodePool its offerings depend on: its node template (labels,
// requirements, taints).
func templateHash(p Pool) uint64 {
	doc, _ := json.Marshal(p.NodePool.Spec.Template)
	h := fnv.New64a()
	_, _ = h.Write(doc)
	return h.Sum64()
}
