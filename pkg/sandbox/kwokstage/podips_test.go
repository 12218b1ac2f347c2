package kwokstage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/utils/gotpl"
)

// A pod played twice from the same stale copy is given the same address both times, as kwok's
// watch and its list of a node's pods hand it over; another pod gets an address of its own.
func TestRememberPodIPsPlaysTheSameAddressTwice(t *testing.T) {
	raw, err := RememberPodIPs(podfast.DefaultPodReady)
	if err != nil {
		t.Fatal(err)
	}
	stage, err := config.UnmarshalWithType[*internalversion.Stage](raw)
	if err != nil {
		t.Fatalf("the rewritten stage does not load: %v", err)
	}
	var status string
	for _, step := range stage.Spec.Steps {
		if step.Patch != nil && step.Patch.Template != "" {
			status = step.Patch.Template
		}
	}
	drawn := 0
	funcs := gotpl.FuncMap{
		"NodeIPsWith": func(string) []string { return []string{"10.0.0.1"} },
		// kwok's pool hands out a new address on every call.
		"PodIPsWith": func(_ string, _ bool, _, _, _ string) ([]string, error) {
			drawn++
			return []string{fmt.Sprintf("10.0.1.%d", drawn)}, nil
		},
	}
	maps.Copy(funcs, NewPodIPMemo().FuncMap())
	render := gotpl.NewRenderer(funcs)
	podIPs := func(uid string) []any {
		t.Helper()
		pod := map[string]any{"metadata": map[string]any{"uid": uid, "name": "p", "namespace": "default"}, "spec": map[string]any{"nodeName": "n"}}
		out, err := render.ToJSON(status, pod)
		if err != nil {
			t.Fatalf("rendering the stage: %v", err)
		}
		var status map[string]any
		if err := json.Unmarshal(out, &status); err != nil {
			t.Fatal(err)
		}
		ips, _ := status["podIPs"].([]any)
		return ips
	}
	first, again, other := podIPs("a"), podIPs("a"), podIPs("b")
	if len(first) != 1 || fmt.Sprint(first) != fmt.Sprint(again) {
		t.Errorf("pod a played twice got %v, then %v; want one address, the same both times", first, again)
	}
	if fmt.Sprint(other) == fmt.Sprint(first) {
		t.Errorf("pods a and b both got %v", first)
	}
}

func TestPodIPMemoForgets(t *testing.T) {
	now := time.Unix(0, 0)
	m := NewPodIPMemo()
	m.now = func() time.Time { return now }
	m.Give("a", []string{"10.0.1.1"})
	now = now.Add(rememberFor)
	if got := m.Given("a"); len(got) != 1 {
		t.Errorf("after %v, Given(a) = %v; want it still remembered", rememberFor, got)
	}
	now = now.Add(rememberFor)
	if got := m.Given("a"); len(got) != 0 {
		t.Errorf("after %v, Given(a) = %v; want it forgotten", 2*rememberFor, got)
	}
}

func TestStageErrorCounterCountsObjectsStillThere(t *testing.T) {
	var out bytes.Buffer
	w := &StageErrorCounter{Out: &out}
	for _, line := range []string{
		`{"level":"ERROR","msg":"failed to apply stage","err":"failed to patch pod p: Pod \"p\" is invalid: status.podIPs: Invalid value: ...: may specify no more than one IP for each IP family","stage":"pod-ready"}`,
		`{"level":"ERROR","msg":"failed to apply stage","err":"failed to delete resource for step 0: failed to delete pod p: pods \"p\" not found","stage":"pod-delete"}`,
		`{"level":"WARN","msg":"Failed to get delay"}`,
		`{"level":"ERROR","msg":"failed to apply stage","err":"failed to delete resource for step 0: failed to delete pod p: pods \"p\" not found","stage":"pod-delete-unfinished"}`,
	} {
		if _, err := w.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	if w.Count() != 1 {
		t.Errorf("Count() = %d, want 1: the invalid status, not the pod already gone nor the warning", w.Count())
	}
	if strings.Count(out.String(), "\n") != 3 {
		t.Errorf("the log passed on has %q; want the first three lines, not pod-delete-unfinished's pod already gone", out.String())
	}
}
