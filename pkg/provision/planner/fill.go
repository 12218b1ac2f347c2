package planner

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tailor-sh/tailor/pkg/provision/planner/packing"
	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
	"github.com/tailor-sh/tailor/pkg/provision/planner/roomindex"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// Claims with room first. A claim launches as the cheapest of its offerings that holds its pods,
// so a pod that joins a claim costs nothing when it fits what that type leaves free, and grows
// the claim to a dearer type otherwise. Plain first fit over the claims in the order they opened
// lets the first claims, which may still grow to the biggest types, take every pod, while the
// claims that constraints keep apart (one pod per node for hostname spread or anti-affinity)
// launch mostly empty: in Karpenter's benchmark mix that was a fifth of the price. So the plan
// weighs a pod first on the claims whose cheapest holding type has room for its requests, then
// on the others, each time in the order the claims opened. (Best fit among the claims with room,
// tightest first, priced the same on the benchmark and cost a sort per pod.) Room only orders
// the questions; each claim still takes the pod only if the Filter plugins pass (weigh).

// A pod that spreads (DoNotSchedule) or has required anti-affinity is mostly turned away where
// pods of its own kind (its namespace and labels: the replicas of its Deployment) already run, so
// it is weighed on those claims last: with one replica per node, weighing it first-fit on every
// claim made a plan of n such pods ask Filter n²/2 times.

// fillPass is one round of weighing a pod on the open claims: those with room or not, with pods
// of the pod's kind or not.
type fillPass struct{ roomy, kin bool }

var (
	// fillPasses are the rounds for most pods: kin does not matter.
	fillPasses = []fillPass{{roomy: true}, {roomy: false}}
	// shyPasses are the rounds for a pod that repels its own kind.
	shyPasses = []fillPass{{roomy: true}, {roomy: true, kin: true}, {roomy: false}, {roomy: false, kin: true}}
	// lonePasses are the rounds for a pod that every claim holding its kind refuses
	// (alonePerHost): the claims without its kind only.
	lonePasses = []fillPass{{roomy: true}, {roomy: false}}
)

// passesFor returns the rounds in which the plan weighs pod on the open claims, and whether the
// pod repels its own kind.
func passesFor(pod *corev1.Pod, defaultKeys []string) ([]fillPass, bool) {
	switch {
	case alonePerHost(pod):
		return lonePasses, true
	case podkeys.Spreads(pod, defaultKeys) || len(packing.RequiredAntiTerms(pod)) > 0:
		return shyPasses, true
	}
	return fillPasses, false
}

// alonePerHost reports whether a required anti-affinity term of pod selects, by hostname, every
// pod of its kind (its namespace and labels): InterPodAffinity then refuses it on every claim
// that holds one, since every claim carries a hostname. Late in a plan of such replicas nearly
// every claim holds one, so the passes over the claims of its kind asked the index for nearly
// every claim to skip it (1,800 a pod at 20,000 pods of Karpenter's mix, 180 at 2,000), and
// refused the pod on whatever claims they weighed. A term that tells pods of the kind apart
// (mismatchLabelKeys), or whose namespaces its namespace selector decides, is not taken for one.
func alonePerHost(pod *corev1.Pod) bool {
	own := labels.Set(pod.Labels)
	for _, t := range packing.RequiredAntiTerms(pod) {
		if t.TopologyKey != corev1.LabelHostname || t.NamespaceSelector != nil || len(t.MismatchLabelKeys) > 0 ||
			(len(t.Namespaces) > 0 && !slices.Contains(t.Namespaces, pod.Namespace)) {
			continue
		}
		// matchLabelKeys adds the pod's own values for its keys, which its kind shares.
		if sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector); err == nil && sel.Matches(own) {
			return true
		}
	}
	return false
}

// claimRooms holds each open claim's room (spare), in the order the claims opened, side by side
// in one slice, and the indexes that find the claims a pod is weighed on (roomindex.go): every
// pod a plan places asks it of the open claims, and at 20,000 pods on 4,000 claims, reaching
// each claim's room through the claim was a seventh of the plan's time.
type claimRooms struct {
	rooms []claimRoom
	index roomindex.Tree
	// log lists the claims that opened or changed, in order; taken is how much of it rooms and
	// index hold.
	log   []int
	taken int
	// orders are the growth orders kept for the last sizes of pod asked about.
	orders roomindex.Orders[growth]
	// sides are the claims holding each kind of pod that repels its own; sideScratch and
	// sideGrowths are order's scratch for them.
	sides       map[kindID]*roomindex.Bits
	sideScratch []int
	sideGrowths []growth
	// by and refusedIn say, for the pod order runs for, whether a domain answers for its
	// claims and which refused it (grow.go).
	by        byDomain
	refusedIn map[domain]bool
}

type claimRoom struct {
	milliCPU, memory int64
	pods             int
	// at is where in the claim's alive offerings its cheapest holding one is (-1: none): the
	// search for what the claim would grow into starts there (grow.go).
	at int
}

// holds reports whether the room holds a pod asking for asks: cpu, memory and a pod's place.
func (room claimRoom) holds(asks simulation.Requests) bool {
	return room.pods > 0 && asks.MilliCPU <= room.milliCPU && asks.Memory <= room.memory
}

// opened adds a claim, the last to open; changed records that a pod joined claim i.
func (r *claimRooms) opened() {
	r.log = append(r.log, len(r.rooms))
	r.rooms = append(r.rooms, claimRoom{})
}

func (r *claimRooms) changed(i int) { r.log = append(r.log, i) }

// update takes in the rooms of the claims that opened or changed since it last ran.
func (r *claimRooms) update(open []*openClaim) {
	for _, i := range r.log[r.taken:] {
		room := open[i].spare()
		r.rooms[i] = room
		if room.pods > 0 {
			r.index.Set(i, room.milliCPU, room.memory)
		} else {
			r.index.Set(i, -1, -1)
		}
	}
	r.taken = len(r.log)
}

// holds records that the claim now holds a pod of kind that repels its kind. A claim holds few
// kinds, so they are a short list; a slice indexed by kind grew every claim to the plan's count
// of kinds, and every replica of a StatefulSet is a kind of its own (its pod-name label).
func (oc *openClaim) holds(kind kindID) {
	if !oc.holding(kind) {
		oc.kinds = append(oc.kinds, kind)
	}
}

// holding reports whether the claim holds a pod of kind.
func (oc *openClaim) holding(kind kindID) bool { return slices.Contains(oc.kinds, kind) }

// kindOf is what the replicas of one owner share that their own selectors read.
func kindOf(p *corev1.Pod) string { return p.Namespace + "/" + labels.Set(p.Labels).String() }

// kindID numbers a plan's kinds (kindOf): every claim is asked about the kind of every pod that
// repels its own, and hashing the labels' string each time was most of that.
type kindID int

type kindIDs map[string]kindID

func (k kindIDs) of(p *corev1.Pod) kindID {
	kind := kindOf(p)
	id, ok := k[kind]
	if !ok {
		id = kindID(len(k) + 1)
		k[kind] = id
	}
	return id
}

// spare is what the cheapest alive offering whose type holds the claim's requests leaves free,
// or nothing when none of them does (a claim whose pods only fit with the capacity half's
// finer points, such as pod-level resources, is weighed in the second round).
func (oc *openClaim) spare() claimRoom {
	used, pods := oc.info.Requested, len(oc.info.Pods)
	for at, i := range oc.alive {
		a := oc.pool.Types[oc.pool.Compatible[i].Typ].Alloc
		if a.MilliCPU >= used.MilliCPU && a.Memory >= used.Memory && a.AllowedPodNumber >= pods {
			return claimRoom{milliCPU: a.MilliCPU - used.MilliCPU, memory: a.Memory - used.Memory,
				pods: a.AllowedPodNumber - pods, at: at}
		}
	}
	return claimRoom{at: -1}
}
