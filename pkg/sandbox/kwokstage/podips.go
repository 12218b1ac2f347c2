// Package kwokstage adjusts the stages kwok plays for the sandbox's kubelets, apart from the
// sandbox so that its tests need not link a control plane.
package kwokstage

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/kwok/pkg/utils/gotpl"
)

// kwok plays a stage on the copy of a pod it was handed, and it can be handed the same pod twice:
// once by its watch and once by the list it makes of a node's pods when it starts to manage the
// node. When the second copy comes after the first play has patched the pod, it still says
// Pending, so pod-ready plays again; kwok's PodIPsWith draws a new address from its pool, and the
// strategic merge of status.podIPs (merged by ip) adds it beside the first: two IPv4 addresses,
// which the API server refuses. Remembering what a pod was given makes the second play hand out
// the same address, which merges into the first.

// podIPsLine is how kwok's fast pod-ready stage picks a pod's addresses.
const podIPsLine = `{{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}`

// RememberPodIPs makes a pod-ready stage ask PodIPMemo first, and draw from kwok's pool
// (PodIPsWith) only for a pod it has not given addresses to.
func RememberPodIPs(stage string) (string, error) {
	if !strings.Contains(stage, podIPsLine) {
		return "", fmt.Errorf("kwok's pod-ready stage no longer picks addresses as the sandbox expects (%s): see kwokstage.RememberPodIPs", podIPsLine)
	}
	remembered := `{{ $podIPs := PodIPsGiven ( or .metadata.uid "" ) }}{{ if not $podIPs }}{{ $podIPs = GivePodIPs ( or .metadata.uid "" ) ` +
		`( PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) ) }}{{ end }}`
	return strings.Replace(stage, podIPsLine, remembered, 1), nil
}

// PodIPMemo remembers the addresses given to each pod, by UID, for one to two minutes: the
// second copy of a pod comes within seconds of the first, and forgetting bounds the memory of a
// sandbox that runs for days.
type PodIPMemo struct {
	mu        sync.Mutex
	cur, prev map[string][]string
	rotated   time.Time
	now       func() time.Time
}

const rememberFor = time.Minute

// NewPodIPMemo returns an empty memo.
func NewPodIPMemo() *PodIPMemo {
	return &PodIPMemo{cur: map[string][]string{}, now: time.Now}
}

// FuncMap is the template functions RememberPodIPs' stage calls, for kwok's controller Config.
func (m *PodIPMemo) FuncMap() gotpl.FuncMap {
	return gotpl.FuncMap{"PodIPsGiven": m.Given, "GivePodIPs": m.Give}
}

// Given returns what the pod was given, or nothing.
func (m *PodIPMemo) Given(uid string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rotate()
	if ips, ok := m.cur[uid]; ok {
		return ips
	}
	return m.prev[uid]
}

// Give remembers ips as the pod's and returns them.
func (m *PodIPMemo) Give(uid string, ips []string) []string {
	if uid == "" {
		return ips
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rotate()
	m.cur[uid] = ips
	return ips
}

func (m *PodIPMemo) rotate() {
	if now := m.now(); now.Sub(m.rotated) >= rememberFor {
		m.prev, m.cur, m.rotated = m.cur, map[string][]string{}, now
	}
}

// StageErrorCounter passes kwok's log on and counts the stages kwok failed to play on an object
// that is still there: each is a pod or node whose status a kubelet would have reported and kwok
// did not. A stage played on an object already gone is not counted: a pod deleted while kwok
// plays it has no status left to report.
type StageErrorCounter struct {
	Out   io.Writer
	count atomic.Int64
}

// Count is how many stages kwok failed to play so far.
func (w *StageErrorCounter) Count() int64 { return w.count.Load() }

// Write takes one log record: kwok's slog handler writes each in one call. It drops
// pod-delete-unfinished's finding its pod gone: that is the stage's usual end, the API server
// having removed the pod itself (see FinishDeletion), not a failure to report.
func (w *StageErrorCounter) Write(p []byte) (int, error) {
	if !bytes.Contains(p, []byte("failed to apply stage")) {
		return w.Out.Write(p)
	}
	if !bytes.Contains(p, []byte("not found")) {
		w.count.Add(1)
	} else if bytes.Contains(p, []byte(`"stage":"`+unfinishedDeletionStage+`"`)) {
		return len(p), nil
	}
	return w.Out.Write(p)
}
