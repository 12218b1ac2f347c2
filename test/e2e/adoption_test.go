package e2e

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
	e := newAWSEnv(t)
	e.applyExample("ec2nodeclass.yaml")
	e.createNodePool(consolidatingPool("default"))
	web := deploymentOf("web", 4, "1", "1Gi")
	if _, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRunning("app=web", 4, 2*time.Minute)
	before := e.claimInstances()

	// Karpenter's controller, scaled to zero, leaves its own hashes behind. Tailor is stopped
	// meanwhile, so what it finds at start is what a migration hands it.
	e.cluster.StopScheduler()
	karpenterHashes := func(hashKey, versionKey, version string) []byte {
		data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			hashKey: "karpenter-" + version, versionKey: version}}})
		return data
	}
	poolPatch := karpenterHashes(karpv1.NodePoolHashAnnotationKey, karpv1.NodePoolHashVersionAnnotationKey, karpenterPoolHashVersion)
	classPatch := karpenterHashes(awsv1.AnnotationEC2NodeClassHash, awsv1.AnnotationEC2NodeClassHashVersion, karpenterClassHashVersion)
	if _, err := e.cluster.Tailor.KarpenterV1().NodePools().Patch(e.ctx, "default", types.MergePatchType, poolPatch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for name := range before {
		for _, p := range [][]byte{poolPatch, classPatch} {
			if _, err := e.cluster.Tailor.KarpenterV1().NodeClaims().Patch(e.ctx, name, types.MergePatchType, p, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := e.cluster.Tailor.AWSV1().EC2NodeClasses().Patch(e.ctx, "default", types.MergePatchType, classPatch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.cluster.StartScheduler(e.ctx); err != nil {
		t.Fatal(err)
	}

	e.waitFor("every NodeClaim re-stamped with Tailor's hashes", time.Minute, func() (bool, string) {
		pool, err := e.cluster.Tailor.KarpenterV1().NodePools().Get(e.ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		class, err := e.cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		claims, err := e.cluster.Tailor.KarpenterV1().NodeClaims().List(e.ctx, metav1.ListOptions{})
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
	if after := e.claimInstances(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("adopting changed the fleet:\nbefore %v\nafter  %v", before, after)
	}
	claims, err := e.cluster.Tailor.KarpenterV1().NodeClaims().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		if c.IsTrue(karpv1.ConditionTypeDrifted) {
			t.Errorf("NodeClaim %s was called drifted for carrying Karpenter's hash versions: %+v", c.Name, c.GetCondition(karpv1.ConditionTypeDrifted))
		}
	}

	e.scale(web, 0)
	e.waitFor("consolidation to remove the adopted nodes and terminate their instances", 2*time.Minute, func() (bool, string) {
		left := e.claimInstances()
		var running []string
		for _, inst := range e.emu.Instances() {
			if _, ok := idsOf(before)[inst.ID]; ok && inst.State != "terminated" {
				running = append(running, inst.ID+" "+inst.State)
			}
		}
		return len(left) == 0 && len(running) == 0, fmt.Sprintf("NodeClaims %v, instances %v", left, running)
	})
}

// claimInstances maps each NodeClaim to its provider ID.
func (e *awsEnv) claimInstances() map[string]string {
	e.t.Helper()
	claims, err := e.cluster.Tailor.KarpenterV1().NodeClaims().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range claims.Items {
		out[c.Name] = c.Status.ProviderID
	}
	return out
}

// idsOf returns the instance IDs of provider IDs (aws:///zone/id).
func idsOf(claims map[string]string) map[string]struct{} {
	out := map[string]struct{}{}
	for _, id := range claims {
		out[id[strings.LastIndex(id, "/")+1:]] = struct{}{}
	}
	return out
}
