package userdata

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
)

// reservedResources are what --kube-reserved and --system-reserved (and Bottlerocket's settings of
// the same names) take; evictionSignals are the kubelet's hard eviction signals.
var (
	reservedResources = sets.New("cpu", "memory", "ephemeral-storage", "pid")
	evictionSignals   = sets.New("memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
		"imagefs.inodesFree", "containerfs.available", "containerfs.inodesFree", "pid.available", "allocatableMemory.available")
)

// errRefused marks what check refuses.
var errRefused = errors.New("the kubelet would not start")

// check refuses a node its kubelet would refuse to start as: the kubelet validates its labels and
// taints as the API server validates a Node's, parses reservations as quantities and knows only its
// own eviction signals (Bottlerocket's settings API refuses the same). An emulated node must fail
// where a real one would, and what Render writes must read back as the same node.
func (n Node) check() error {
	if err := n.checkNode(); err != nil {
		return fmt.Errorf("%w: %w", errRefused, err)
	}
	return nil
}

func (n Node) checkNode() error {
	for _, k := range sortedKeys(n.Labels) {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(n.Labels[k])...); len(errs) > 0 {
			return fmt.Errorf("node label %q=%q: %s", k, n.Labels[k], strings.Join(errs, "; "))
		}
	}
	for _, t := range n.Taints {
		if errs := append(validation.IsQualifiedName(t.Key), validation.IsValidLabelValue(t.Value)...); len(errs) > 0 {
			return fmt.Errorf("taint %q: %s", t.ToString(), strings.Join(errs, "; "))
		}
	}
	for name, m := range map[string]map[string]string{"kube-reserved": n.KubeReserved, "system-reserved": n.SystemReserved} {
		for _, k := range sortedKeys(m) {
			if !reservedResources.Has(k) {
				return fmt.Errorf("%s: %q is not one of %s", name, k, strings.Join(sets.List(reservedResources), ", "))
			}
			if _, err := resource.ParseQuantity(m[k]); err != nil {
				return fmt.Errorf("%s: %s=%q: %w", name, k, m[k], err)
			}
		}
	}
	for _, k := range sortedKeys(n.EvictionHard) {
		if !evictionSignals.Has(k) {
			return fmt.Errorf("eviction-hard: %q is not an eviction signal of the kubelet", k)
		}
		if v := n.EvictionHard[k]; !strings.HasSuffix(v, "%") {
			if _, err := resource.ParseQuantity(v); err != nil {
				return fmt.Errorf("eviction-hard: %s=%q: %w", k, v, err)
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
