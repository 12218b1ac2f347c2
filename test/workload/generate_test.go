package workload

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tailor-sh/tailor/pkg/plan"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// A seed is a scenario: generating it twice writes the same bytes, and another seed writes
// something else.
func TestGenerateIsDeterministic(t *testing.T) {
	read := func(seed uint64) []byte {
		dir := t.TempDir()
		if err := Generate(seed).Write(dir); err != nil {
			t.Fatal(err)
		}
		var all []byte
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, data...)
		}
		return all
	}
	for seed := range uint64(20) {
		if a, b := read(seed), read(seed); !bytes.Equal(a, b) {
			t.Fatalf("seed %d wrote different manifests on two runs", seed)
		}
	}
	if bytes.Equal(read(1), read(2)) {
		t.Error("seeds 1 and 2 wrote the same manifests")
	}
}

// The written manifests are what `tailor plan` reads: every object decodes, none is skipped but
// the kinds a plan has no use for, and the workloads expand to the scenario's pods.
func TestWrittenManifestsLoad(t *testing.T) {
	for seed := range uint64(200) {
		s := Generate(seed)
		if n := s.Pods(); n < 1 || n > MaxPods {
			t.Errorf("seed %d: %d pods, want 1..%d", seed, n, MaxPods)
		}
		dir := t.TempDir()
		if err := s.Write(dir); err != nil {
			t.Fatal(err)
		}
		files, err := sandbox.ManifestFiles([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		m, err := plan.Load(files)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(m.Pods) != s.Pods() || len(m.NodePools) != len(s.NodePools) || len(m.DaemonSets) != len(s.DaemonSets) {
			t.Errorf("seed %d: plan.Load read %d pods, %d NodePools, %d DaemonSets; generated %d, %d, %d",
				seed, len(m.Pods), len(m.NodePools), len(m.DaemonSets), s.Pods(), len(s.NodePools), len(s.DaemonSets))
		}
		for _, sk := range m.Skipped {
			switch sk.Kind {
			case "Namespace", "PriorityClass", "PodDisruptionBudget":
			default:
				t.Errorf("seed %d: plan.Load skipped %s %s: %s", seed, sk.Kind, sk.Name, sk.Reason)
			}
		}
	}
}

// Some StatefulSets get a volume per pod, of a WaitForFirstConsumer class the scenario carries,
// mounted by their container; the pods read them back through plan.Load as bound claims would be.
func TestStatefulSetVolumes(t *testing.T) {
	withVolumes, without := 0, 0
	for seed := range uint64(200) {
		s := Generate(seed)
		for _, st := range s.StatefulSets {
			if len(st.Spec.VolumeClaimTemplates) == 0 {
				without++
				continue
			}
			withVolumes++
			if len(s.StorageClasses) != 1 || s.StorageClasses[0].Name != StorageClassName {
				t.Fatalf("seed %d: StatefulSet %s has volumes, the scenario's classes are %v", seed, st.Name, s.StorageClasses)
			}
			if m := s.StorageClasses[0].VolumeBindingMode; m == nil || *m != "WaitForFirstConsumer" {
				t.Errorf("seed %d: class binding mode %v, want WaitForFirstConsumer", seed, m)
			}
			vct := st.Spec.VolumeClaimTemplates[0]
			if vct.Spec.StorageClassName == nil || *vct.Spec.StorageClassName != StorageClassName {
				t.Errorf("seed %d: StatefulSet %s's claim template names class %v", seed, st.Name, vct.Spec.StorageClassName)
			}
			mounts := st.Spec.Template.Spec.Containers[0].VolumeMounts
			if len(mounts) == 0 || mounts[len(mounts)-1].Name != vct.Name {
				t.Errorf("seed %d: StatefulSet %s's container does not mount %s: %v", seed, st.Name, vct.Name, mounts)
			}
		}
	}
	if withVolumes == 0 || without == 0 {
		t.Fatalf("over 200 seeds, %d StatefulSets with volumes and %d without; want both", withVolumes, without)
	}
}
