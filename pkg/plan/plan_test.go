package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

func run(t *testing.T, files []string) *Result {
	t.Helper()
	m, err := Load(files)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Run(ctx, m, Options{SchedulerName: "tailor", Catalog: fake.Catalog(), CatalogName: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

const pool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
`

func TestRunExamples(t *testing.T) {
	res := run(t, examples(t))
	if res.Pending != 5 || len(res.Unplaceable) != 0 || len(res.Ignored) != 0 || len(res.Warnings) != 0 {
		t.Fatalf("result: %+v", res)
	}
	placed := 0
	var sum float64
	for _, c := range res.NodeClaims {
		placed += len(c.Pods)
		sum += c.PricePerHour
		if c.NodePool != "default" || c.InstanceType == "" || c.Zone == "" || c.Options == 0 || len(c.InstanceTypes) == 0 || c.InstanceTypes[0] != c.InstanceType {
			t.Errorf("claim: %+v", c)
		}
	}
	if placed != 5 || res.PricePerHour <= 0 || res.PricePerHour != sum {
		t.Errorf("placed %d pods for $%g (claims sum to $%g)", placed, res.PricePerHour, sum)
	}
	if res.LowerBoundPerHour <= 0 || res.LowerBoundPerHour > res.PricePerHour || res.PriceToBound < 1 {
		t.Errorf("bound $%g, price $%g, ratio %g", res.LowerBoundPerHour, res.PricePerHour, res.PriceToBound)
	}
}

// A DaemonSet's pod runs on every new node: its requests are part of what the node must hold.
func TestRunDaemonSets(t *testing.T) {
	without := run(t, examples(t))
	with := run(t, append(examples(t), write(t, `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: c, image: pause, resources: {requests: {cpu: "3", memory: 1Gi}}}]
`)...))
	if len(with.NodeClaims) != 1 || len(without.NodeClaims) != 1 {
		t.Fatalf("claims: with %+v, without %+v", with.NodeClaims, without.NodeClaims)
	}
	c := with.NodeClaims[0]
	if strings.Join(c.DaemonSets, ",") != "kube-system/agent" || c.Requests["cpu"] != "8" || c.Requests["memory"] != "6Gi" {
		t.Errorf("claim with the DaemonSet: daemonSets %v, requests %v", c.DaemonSets, c.Requests)
	}
	if len(without.NodeClaims[0].DaemonSets) != 0 || without.NodeClaims[0].Requests["cpu"] != "5" {
		t.Errorf("claim without: %+v", without.NodeClaims[0])
	}
	// 5 cpu of pods fit an 8-cpu node (7.91 allocatable); with 3 more for the agent they do not.
	if with.PricePerHour <= without.PricePerHour {
		t.Errorf("the DaemonSet's room costs nothing: $%g with, $%g without", with.PricePerHour, without.PricePerHour)
	}
}

func TestRunExistingNodes(t *testing.T) {
	res := run(t, write(t, `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: preferred}
spec:
  weight: 10
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
  limits: {cpu: "9"}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spare}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: r
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
`, `
apiVersion: v1
kind: Node
metadata:
  name: old
  labels: {karpenter.sh/nodepool: preferred, kubernetes.io/hostname: old}
status: {capacity: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: running}
spec:
  nodeName: old
  containers: [{name: c, image: pause, resources: {requests: {cpu: "6", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: fits}
spec:
  schedulerName: tailor
  containers: [{name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: needs-a-node}
spec:
  schedulerName: tailor
  containers: [{name: c, image: pause, resources: {requests: {cpu: "3", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: other}
spec:
  containers: [{name: c, image: pause}]
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere}
spec:
  nodeName: gone
  containers: [{name: c, image: pause}]
`))
	// 6 of the old node's 8 cpu are taken: the 1-cpu pod fits there and the 3-cpu one needs a
	// new node. The old node counts against its NodePool's limit of 9 cpu, so the new node comes
	// from the other NodePool, weight notwithstanding.
	if strings.Join(res.FitsExisting, ",") != "default/fits" {
		t.Errorf("fits existing: %v", res.FitsExisting)
	}
	if len(res.NodeClaims) != 1 || res.NodeClaims[0].NodePool != "spare" || strings.Join(res.NodeClaims[0].Pods, ",") != "default/needs-a-node" {
		t.Fatalf("claims: %+v", res.NodeClaims)
	}
	if len(res.Unplaceable) != 0 || len(res.Warnings) != 0 {
		t.Errorf("unplaceable %+v, warnings %v", res.Unplaceable, res.Warnings)
	}
	ignored := map[string]string{}
	for _, i := range res.Ignored {
		ignored[i.Pod] = i.Reason
	}
	if !strings.Contains(ignored["default/other"], "schedulerName is default-scheduler") ||
		!strings.Contains(ignored["default/elsewhere"], "node gone, which is not in the manifests") || len(ignored) != 2 {
		t.Errorf("ignored: %v", ignored)
	}
}

func TestRunUnplaceableReasons(t *testing.T) {
	res := run(t, write(t, pool, `
apiVersion: v1
kind: Pod
metadata: {name: arm}
spec:
  schedulerName: tailor
  nodeSelector: {kubernetes.io/arch: arm64}
  containers: [{name: c, image: pause}]
---
apiVersion: v1
kind: Pod
metadata: {name: claims-a-missing-volume}
spec:
  schedulerName: tailor
  containers: [{name: c, image: pause}]
  volumes: [{name: v, persistentVolumeClaim: {claimName: missing}}]
`))
	reasons := map[string]Reason{}
	for _, u := range res.Unplaceable {
		if len(u.Reasons) != 1 {
			t.Fatalf("%s: %+v", u.Pod, u.Reasons)
		}
		reasons[u.Pod] = u.Reasons[0]
	}
	if r := reasons["default/arm"]; r.NodePool != "default" || !strings.Contains(r.Reason, "kubernetes.io/arch In [arm64]") {
		t.Errorf("arm: %+v", r)
	}
	// PreFilter refuses the pod before any NodePool is asked.
	if r := reasons["default/claims-a-missing-volume"]; r.NodePool != "" || !strings.Contains(r.Reason, `"missing" not found`) {
		t.Errorf("missing volume: %+v", r)
	}
	if len(res.NodeClaims) != 0 || res.PricePerHour != 0 || res.LowerBoundPerHour != 0 {
		t.Errorf("nothing placed, yet: %+v", res)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "EC2NodeClass default, which is not in the manifests") {
		t.Errorf("warnings: %v", res.Warnings)
	}
}

// The JSON names are an interface: scripts read them.
func TestResultJSON(t *testing.T) {
	res := run(t, examples(t))
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(buf.Bytes(), &generic); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"schedulerName", "catalog", "pending", "nodeClaims", "fitsExisting", "unplaceable",
		"ignoredPods", "skippedObjects", "warnings", "pricePerHour", "lowerBoundPerHour", "priceToBound"} {
		if _, ok := generic[key]; !ok {
			t.Errorf("JSON has no %q: %s", key, buf.String())
		}
	}
	claim := generic["nodeClaims"].([]any)[0].(map[string]any)
	for _, key := range []string{"nodePool", "instanceType", "zone", "capacityType", "pricePerHour", "options",
		"instanceTypes", "requests", "allocatable", "pods"} {
		if _, ok := claim[key]; !ok {
			t.Errorf("NodeClaim JSON has no %q: %v", key, claim)
		}
	}
	buf.Reset()
	if err := res.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NodeClaims to launch", "default/inflate-", "Total: $", "price/bound"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, buf.String())
		}
	}
}
