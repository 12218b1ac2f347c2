package provreq

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// BookedPods returns pods as a lister that also lists the booked pods, for the provisioner and
// the disruption loop. Only List and Get are asked of it.
func (b *Bookings) BookedPods(pods corelisters.PodLister) corelisters.PodLister {
	b.mu.Lock()
	b.real = pods
	b.mu.Unlock()
	return bookedLister{real: pods, b: b}
}

type bookedLister struct {
	real corelisters.PodLister
	b    *Bookings
}

func (l bookedLister) List(selector labels.Selector) ([]*corev1.Pod, error) {
	all, err := l.real.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	booked := l.b.booked(all)
	if len(booked) == 0 && selector.Empty() {
		return all, nil
	}
	out := make([]*corev1.Pod, 0, len(all)+len(booked))
	for _, p := range append(all, booked...) {
		if selector.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (l bookedLister) Pods(namespace string) corelisters.PodNamespaceLister {
	return bookedNamespaceLister{PodNamespaceLister: l.real.Pods(namespace), all: l, namespace: namespace}
}

// bookedNamespaceLister lists one namespace's pods and booked pods; Get reads real pods only, as
// nothing gets a booked pod by name.
type bookedNamespaceLister struct {
	corelisters.PodNamespaceLister
	all       bookedLister
	namespace string
}

func (l bookedNamespaceLister) List(selector labels.Selector) ([]*corev1.Pod, error) {
	if l.all.b.empty() {
		return l.PodNamespaceLister.List(selector) // the namespace's index, not every pod
	}
	all, err := l.all.List(selector)
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, p := range all {
		if p.Namespace == l.namespace {
			out = append(out, p)
		}
	}
	return out, nil
}
