package provision

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// siblingsOf names the set of pods interchangeable with pod: those of the same controller
// (ReplicaSet, Job), alike in every request and constraint. A pod with claims of its own (a
// StatefulSet's volumes) or without a controller has none: "".
func siblingsOf(pod *corev1.Pod) types.UID {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return ""
		}
	}
	for _, o := range pod.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind != "StatefulSet" {
			return o.UID
		}
	}
	return ""
}

// handOver keeps the plans of interchangeable pods whole when the scheduler binds one of them to
// the room a plan kept for a sibling: that happens whenever the pods are not all nominated
// (see schedulerview.Admissible) and a node comes up while some wait. The sibling it displaced
// takes the pod's own place in the plan, if it had one, and is otherwise planned again at once,
// instead of heading for a node that has no room left for it until the stranded watch gives up
// on it. Call it from Reserve, with p.mu held, before the pod's own plan is forgotten.
func (p *Provisioner) handOver(pod *corev1.Pod, node string) {
	own, had := p.headed[pod.UID]
	if had && own.node == node {
		return
	}
	siblings := siblingsOf(pod)
	if siblings == "" {
		return
	}
	for uid, h := range p.headed {
		if uid == pod.UID || h.node != node || h.siblings != siblings || p.assumed[uid] != "" {
			continue
		}
		if had {
			now := p.opts.Clock.Now()
			p.headed[uid] = heading{node: own.node, since: now, placed: now, siblings: siblings}
			moveEntry(p.planned, pod.UID, uid)
			moveEntry(p.destined, pod.UID, uid)
			moveEntry(p.admitted, pod.UID, uid)
			if _, ok := p.planned[uid]; ok {
				p.wrote(uid)
			}
		} else {
			delete(p.headed, uid)
			delete(p.planned, uid)
			delete(p.destined, uid)
			delete(p.admitted, uid)
			p.enqueued[uid] = true
		}
		// A sibling that took the pod's place is on its way there, and needs no round; one
		// planned onto a launching NodeClaim now may need its nomination written. A sibling with
		// no place left is planned again, as a pod handed over (see needsPlanning). In a
		// scale-up of one Deployment every pod is a sibling of every other, and the scheduler,
		// weighing the nodes by its own scores, binds pods elsewhere than their plans all along:
		// a full round forced for each (Replan) kept the 20,000-pod fleet's provisioner reading
		// the whole cluster once or twice a second while the scheduler worked through its queue.
		nominate := !had || p.planned[uid] != ""
		if ctx := p.runCtx; ctx != nil {
			klog.FromContext(ctx).V(2).Info("A pod took the room planned for a sibling; the sibling takes its place in the plan",
				"pod", klog.KObj(pod), "node", node, "sibling", uid, "siblingHeadsFor", p.headed[uid].node)
			if nominate {
				go p.nominateSoon(ctx) // it takes p.mu, which the caller holds
			}
		}
		if !had {
			p.batcher.Soon()
		}
		return
	}
}

// moveEntry gives to's entry in m from's, or none if from has none.
func moveEntry[V any](m map[types.UID]V, from, to types.UID) {
	if v, ok := m[from]; ok {
		m[to] = v
	} else {
		delete(m, to)
	}
}

// Initialized moves the pending pods a plan sent to node into the scheduler's active queue once
// node's NodeClaim has initialized. The scheduler would try them again on its own only if a
// queueing hint took the node's arrival for a change that might help them: the hints of pod
// affinity and topology spread skip a node whose labels match no pod of theirs yet, and such pods
// would wait in the unschedulable queue beside their node for minutes. The pods planned onto
// claim are woken too, whether or not a nomination pass has headed them there yet: their hold on
// the node ends now (see Released).
func (p *Provisioner) Initialized(claim, node string) {
	if node == "" {
		return
	}
	p.activatePending(node, claim)
}

// activatePending moves the pending pods headed to node, or planned onto claim, into the
// scheduler's active queue; an empty name matches nothing. It takes p.mu itself, so its caller
// must not hold it. It reads the provisioner's own maps and looks up only the pods they name: it
// runs once per NodeClaim that initializes, and listing every pod each time cost a 10,000-pod
// scale-up 13 CPU-s (2,500 claims, each scanning the pending pods under p.mu, where the
// scheduler's Reserve waits).
func (p *Provisioner) activatePending(node, claim string) {
	if p.opts.Activate == nil {
		return
	}
	type named struct {
		uid types.UID
		key string
	}
	var found []named
	p.mu.Lock()
	if node != "" {
		for uid, h := range p.headed {
			if h.node == node {
				found = append(found, named{uid, p.podKeys[uid]})
			}
		}
	}
	if claim != "" {
		for uid, c := range p.planned {
			if c == claim {
				found = append(found, named{uid, p.podKeys[uid]})
			}
		}
	}
	p.mu.Unlock()
	activate := map[string]*corev1.Pod{}
	for _, f := range found {
		namespace, name, err := cache.SplitMetaNamespaceKey(f.key)
		if err != nil || name == "" {
			continue // its key was never seen: the stranded watch wakes it (wake)
		}
		pod, err := p.opts.Pods.Pods(namespace).Get(name)
		if err == nil && pod.UID == f.uid && pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil {
			activate[f.key] = pod
		}
	}
	if len(activate) > 0 {
		p.opts.Activate(activate)
	}
}

// keyOf remembers pod's namespace/name for activatePending; call it with p.mu held whenever pod
// is planned or headed somewhere.
func (p *Provisioner) keyOf(pod *corev1.Pod) {
	if _, ok := p.podKeys[pod.UID]; !ok {
		p.podKeys[pod.UID] = pod.Namespace + "/" + pod.Name
	}
}
