package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// write puts each manifest in its own file in a fresh folder and returns the file names.
func write(t *testing.T, manifests ...string) []string {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for i, m := range manifests {
		f := filepath.Join(dir, string(rune('a'+i))+".yaml")
		if err := os.WriteFile(f, []byte(m), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

func examples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v %v", files, err)
	}
	return files
}

func TestLoadExamples(t *testing.T) {
	m, err := Load(examples(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.NodePools) != 1 || m.NodePools[0].Name != "default" || len(m.NodeClasses) != 1 || len(m.Skipped) != 0 {
		t.Fatalf("pools %d, classes %d, skipped %v", len(m.NodePools), len(m.NodeClasses), m.Skipped)
	}
	if len(m.Pods) != 5 {
		t.Fatalf("want the 5 inflate replicas, got %d pods", len(m.Pods))
	}
	hash := m.Pods[0].Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	uids := map[string]bool{}
	for i, p := range m.Pods {
		if want := "inflate-" + hash + "-" + string(rune('0'+i)); p.Name != want || p.Namespace != "default" {
			t.Errorf("pod %d is %s/%s, want default/%s", i, p.Namespace, p.Name, want)
		}
		if hash == "" || p.Labels["app"] != "inflate" || p.Spec.SchedulerName != "tailor" {
			t.Errorf("pod %s: labels %v, schedulerName %q", p.Name, p.Labels, p.Spec.SchedulerName)
		}
		r := p.Spec.Containers[0].Resources.Requests
		if r.Cpu().String() != "1" || r.Memory().String() != "1Gi" {
			t.Errorf("pod %s requests %v", p.Name, r)
		}
		uids[string(p.UID)] = true
	}
	if len(uids) != 5 {
		t.Errorf("pods share UIDs: %v", uids)
	}
	again, _ := Load(examples(t))
	if again.Pods[0].Name != m.Pods[0].Name || again.Pods[0].UID != m.Pods[0].UID {
		t.Errorf("names and UIDs change between loads: %s/%s, %s/%s", m.Pods[0].Name, m.Pods[0].UID, again.Pods[0].Name, again.Pods[0].UID)
	}
}

const workloads = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: pause, resources: {limits: {cpu: 500m, memory: 256Mi}}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: data}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      schedulerName: tailor
      containers: [{name: c, image: pause, volumeMounts: [{name: state, mountPath: /data}]}]
  volumeClaimTemplates:
  - metadata: {name: state}
    spec: {accessModes: [ReadWriteOnce], storageClassName: wffc, resources: {requests: {storage: 1Gi}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  parallelism: 3
  completions: 2
  template:
    spec:
      schedulerName: tailor
      restartPolicy: Never
      containers: [{name: c, image: pause}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: later}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: pause}]
---
# an empty document
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: solo}
  spec: {schedulerName: tailor, containers: [{name: c, image: pause}]}
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: pause}]}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
`

func TestLoadExpandsWorkloads(t *testing.T) {
	m, err := Load(write(t, workloads))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range m.Pods {
		byName[p.Namespace+"/"+p.Name] = p
	}
	var names []string
	for n := range byName {
		names = append(names, n)
	}
	if len(m.Pods) != 6 {
		t.Fatalf("want 1 web + 2 db + 2 batch + 1 solo pods, got %v", names)
	}
	for _, p := range m.Pods {
		if strings.HasPrefix(p.Name, "web-") {
			// Defaulted as the API server would: one replica, requests from limits, the default
			// scheduler.
			if p.Spec.SchedulerName != corev1.DefaultSchedulerName || p.Spec.Containers[0].Resources.Requests.Cpu().String() != "500m" {
				t.Errorf("web pod: schedulerName %q, requests %v", p.Spec.SchedulerName, p.Spec.Containers[0].Resources.Requests)
			}
		}
	}
	db := byName["data/db-1"]
	if db == nil || db.Labels[appsv1.StatefulSetPodNameLabel] != "db-1" || db.Spec.Hostname != "db-1" || db.Spec.Subdomain != "db" {
		t.Fatalf("db-1: %+v", db)
	}
	if len(db.Spec.Volumes) != 1 || db.Spec.Volumes[0].PersistentVolumeClaim == nil || db.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "state-db-1" {
		t.Errorf("db-1 volumes: %+v", db.Spec.Volumes)
	}
	pvcs := 0
	for _, o := range m.Volumes {
		if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok {
			pvcs++
			if pvc.Namespace != "data" || !strings.HasPrefix(pvc.Name, "state-db-") {
				t.Errorf("pvc %s/%s", pvc.Namespace, pvc.Name)
			}
		}
	}
	if pvcs != 2 {
		t.Errorf("want 2 PVCs from the volumeClaimTemplates, got %d", pvcs)
	}
	if len(m.Warnings) != 2 || !strings.Contains(m.Warnings[0], "PersistentVolumeClaim data/state-db-0 names StorageClass wffc, which is not in the manifests") {
		t.Errorf("warnings: %v", m.Warnings)
	}
	if byName["default/batch-1"] == nil || byName["default/batch-2"] != nil || byName["default/batch-0"].Labels["batch.kubernetes.io/job-name"] != "batch" {
		t.Errorf("want batch-0 and batch-1 only (completions 2 < parallelism 3), got %v", names)
	}
	if len(m.Nodes) != 1 || m.Nodes[0].Status.Allocatable.Cpu().String() != "4" {
		t.Errorf("node allocatable should default to its capacity: %+v", m.Nodes)
	}
	if len(m.DaemonSets) != 1 || m.DaemonSets[0].Namespace != "default" || m.DaemonSets[0].UID == "" {
		t.Errorf("daemonsets: %+v", m.DaemonSets)
	}
	if len(m.Skipped) != 1 || m.Skipped[0].Kind != "Widget" || !strings.HasSuffix(m.Skipped[0].Source, "a.yaml, document 8") {
		t.Errorf("skipped: %+v", m.Skipped)
	}
}

func TestLoadErrorsNameFileAndDocument(t *testing.T) {
	pool := "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}, requirements: []}}}\n"
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"unknown field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replica: 3, selector: {}, template: {}}\n",
			[]string{"a.yaml, document 2", `Deployment "web"`, "replica"}},
		{"wrong type", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: {name: c}}\n",
			[]string{"a.yaml, document 2", `Pod "p"`}},
		{"no kind", "apiVersion: v1\nmetadata: {name: p}\n",
			[]string{"a.yaml, document 2", "apiVersion and kind are required"}},
		{"bad YAML", "apiVersion: v1\nkind: Pod\nmetadata: {name: [p\n",
			[]string{"a.yaml, document 2"}},
		{"bad duration in a NodePool", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec: {template: {spec: {expireAfter: soon, nodeClassRef: {group: g, kind: k, name: n}, requirements: []}}}\n",
			[]string{"a.yaml, document 2", `NodePool "p"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(write(t, pool+"---\n"+tc.doc))
			if err == nil {
				t.Fatal("Load accepted a bad manifest")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// A claim that names no StorageClass gets the default one, as admission would give it.
func TestLoadDefaultStorageClass(t *testing.T) {
	claims := `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: a}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`
	m, err := Load(write(t, claims))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "default/a names no StorageClass") {
		t.Errorf("without a default class: warnings %v", m.Warnings)
	}
	m, err = Load(write(t, claims, `
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: gp3
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
`))
	if err != nil {
		t.Fatal(err)
	}
	pvc := m.Volumes[0].(*corev1.PersistentVolumeClaim)
	if len(m.Warnings) != 0 || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "gp3" {
		t.Errorf("with a default class: warnings %v, class %v", m.Warnings, pvc.Spec.StorageClassName)
	}
}
