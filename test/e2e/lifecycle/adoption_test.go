package lifecycle

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/nodepool/hash"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// Karpenter's hash versions at the time of writing: what its NodePools, EC2NodeClasses and
// NodeClaims carry when Tailor is installed in its place.
const (
	karpenterPoolHashVersion  = "v3"
	karpenterClassHashVersion = "v6"
)

// TestKarpenterNodeClaimsAreAdopted: Tailor takes over the NodeClaims Karpenter launched. They
// speak the same API and their instances carry the same tags, so nothing about them is foreign
// but the hash versions; those are re-stamped rather than read as drift (which would replace
// every node on the day of the switch). Afterwards Tailor owns the nodes: no instance is
// launched twice or collected as a leak, and once their pods are gone, consolidation removes
// them and terminates their instances.
func TestKarpenterNodeClaimsAreAdopted(t *testing.T) {
	e := env.NewAWS(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.CreateNodePool(env.ConsolidatingPool("default"))
	web := env.DeploymentOf("web", 4, "1", "1Gi")
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=web", 4, 2*time.Minute)
	before := e.ClaimInstances()

	// Karpenter's controller, scaled to zero, leaves its own hashes behind. Tailor is stopped
	// meanwhile, so what it finds at start is what a migration hands it.
	e.Cluster.StopScheduler()
	karpenterHashes := func(hashKey, versionKey, version string) []byte {
		data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			hashKey: "karpenter-" + version, versionKey: version}}})
		return data
	}
	poolPatch := karpenterHashes(karpv1.NodePoolHashAnnotationKey, karpv1.NodePoolHashVersionAnnotationKey, karpenterPoolHashVersion)
	classPatch := karpenterHashes(awsv1.AnnotationEC2NodeClassHash, awsv1.AnnotationEC2NodeClassHashVersion, karpenterClassHashVersion)
	if _, err := e.Cluster.Tailor.KarpenterV1().NodePools().Patch(e.Ctx, "default", types.MergePatchType, poolPatch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for name := range before {
		for _, p := range [][]byte{poolPatch, classPatch} {
			if _, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().Patch(e.Ctx, name, types.MergePatchType, p, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := e.Cluster.Tailor.AWSV1().EC2NodeClasses().Patch(e.Ctx, "default", types.MergePatchType, classPatch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Cluster.StartScheduler(e.Ctx); err != nil {
		t.Fatal(err)
	}

	e.WaitFor("every NodeClaim re-stamped with Tailor's hashes", time.Minute, func() (bool, string) {
		pool, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		class, err := e.Cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.Ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var stale []string
		for _, c := range claims.Items {
			if !hash.Stamped(c.Annotations, pool) || c.Annotations[awsv1.AnnotationEC2NodeClassHash] != tailoraws.NodeClassHash(class) ||
				c.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != tailoraws.NodeClassHashVersion {
				stale = append(stale, fmt.Sprintf("%s %v", c.Name, c.Annotations))
			}
		}
		return len(stale) == 0, strings.Join(stale, "; ")
	})
	if after := e.ClaimInstances(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("adopting changed the fleet:\nbefore %v\nafter  %v", before, after)
	}
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		if c.IsTrue(karpv1.ConditionTypeDrifted) {
			t.Errorf("NodeClaim %s was called drifted for carrying Karpenter's hash versions: %+v", c.Name, c.GetCondition(karpv1.ConditionTypeDrifted))
		}
	}

	e.Scale(web, 0)
	e.WaitFor("consolidation to remove the adopted nodes and terminate their instances", 2*time.Minute, func() (bool, string) {
		left := e.ClaimInstances()
		var running []string
		for _, inst := range e.Emu.Instances() {
			if _, ok := idsOf(before)[inst.ID]; ok && inst.State != "terminated" {
				running = append(running, inst.ID+" "+inst.State)
			}
		}
		return len(left) == 0 && len(running) == 0, fmt.Sprintf("NodeClaims %v, instances %v", left, running)
	})
}

// idsOf returns the instance IDs of provider IDs (aws:///zone/id).
func idsOf(claims map[string]string) map[string]struct{} {
	out := map[string]struct{}{}
	for _, id := range claims {
		out[id[strings.LastIndex(id, "/")+1:]] = struct{}{}
	}
	return out
}
