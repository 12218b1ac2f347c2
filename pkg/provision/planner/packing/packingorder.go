package packing

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Order orders pods for first-fit packing: biggest first, and balanced, so that every
// prefix of the order asks for memory and cpu in the proportion ratio (bytes per millicpu: the
// shape of the nodes the plan will fill; 0 for the proportion of the whole batch). Pods come from
// two queues, those heavier in cpu than ratio and the others, each biggest first; the next pod
// comes from the queue that the order so far has asked less of. Sorting by size alone would fill
// the first nodes up to one resource and far from the other, and leave the pods heavy in the
// other for nodes of their own. Ties go by age and UID, so plans are deterministic. Pods that may
// exclude each other keep Karpenter's order among themselves (exclusiveLargestFirst). requests
// gives a pod's requests (the plan's, worked out once per pod).
func Order(pods []*corev1.Pod, ratio float64, requests func(*corev1.Pod) corev1.ResourceList) []*corev1.Pod {
	type keyed struct {
		pod      *corev1.Pod
		cpu, mem float64
	}
	ks := make([]keyed, len(pods))
	var cpus, mems float64
	for i, p := range pods {
		r := requests(p)
		ks[i] = keyed{pod: p, cpu: float64(r.Cpu().MilliValue()), mem: float64(r.Memory().Value())}
		cpus += ks[i].cpu
		mems += ks[i].mem
	}
	if ratio > 0 {
		mems = cpus * ratio
	}
	for i := range ks {
		if cpus > 0 {
			ks[i].cpu /= cpus
		}
		if mems > 0 {
			ks[i].mem /= mems
		}
	}
	sort.SliceStable(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if sa, sb := a.cpu+a.mem, b.cpu+b.mem; sa != sb {
			return sa > sb
		}
		if !a.pod.CreationTimestamp.Equal(&b.pod.CreationTimestamp) {
			return a.pod.CreationTimestamp.Before(&b.pod.CreationTimestamp)
		}
		return a.pod.UID < b.pod.UID
	})
	var cpuHeavy, memHeavy []keyed
	for _, k := range ks {
		if k.cpu > k.mem {
			cpuHeavy = append(cpuHeavy, k)
		} else {
			memHeavy = append(memHeavy, k)
		}
	}
	out := make([]*corev1.Pod, 0, len(ks))
	var cpu, mem float64
	for len(cpuHeavy)+len(memHeavy) > 0 {
		var next keyed
		if len(memHeavy) == 0 || (len(cpuHeavy) > 0 && cpu <= mem) {
			next, cpuHeavy = cpuHeavy[0], cpuHeavy[1:]
		} else {
			next, memHeavy = memHeavy[0], memHeavy[1:]
		}
		cpu, mem = cpu+next.cpu, mem+next.mem
		out = append(out, next.pod)
	}
	return exclusiveLargestFirst(out)
}

// DestinedFirst moves the pods with a destination to the front, each part in its order.
func DestinedFirst(pods []*corev1.Pod, destined map[types.UID]string) []*corev1.Pod {
	if len(destined) == 0 {
		return pods
	}
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if destined[p.UID] != "" {
			out = append(out, p)
		}
	}
	for _, p := range pods {
		if destined[p.UID] == "" {
			out = append(out, p)
		}
	}
	return out
}

// FirstOf moves the pods of first to the front, each part in its order.
func FirstOf(pods []*corev1.Pod, first map[types.UID]bool) []*corev1.Pod {
	if len(first) == 0 {
		return pods
	}
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if first[p.UID] {
			out = append(out, p)
		}
	}
	for _, p := range pods {
		if !first[p.UID] {
			out = append(out, p)
		}
	}
	return out
}
