package aws

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// On the AWS provider, NodeClaims carry the hash of the EC2NodeClass they were launched from, the
// class carries its own, and changing what its instances are launched with (here, their tags)
// drifts them: NodeClassDrift, the reason the provider reports.
func TestAWSNodeClassChangeDrifts(t *testing.T) {
	e := env.NewAWS(t)
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{env.RepoPath("examples")}, nil); err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=inflate", 5, 2*time.Minute)
	e.WaitFor("EC2NodeClass default to carry its hash", time.Minute, func() (bool, string) {
		nc, err := e.Cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.Ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nc.Annotations[awsv1.AnnotationEC2NodeClassHash] == tailoraws.NodeClassHash(nc) &&
			nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == tailoraws.NodeClassHashVersion, fmt.Sprint(nc.Annotations)
	})
	list, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims := list.Items
	if len(claims) == 0 {
		t.Fatal("no NodeClaims")
	}
	class, err := e.Cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.Ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if c.Annotations[awsv1.AnnotationEC2NodeClassHash] != tailoraws.NodeClassHash(class) {
			t.Fatalf("NodeClaim %s was not stamped at launch with the hash of EC2NodeClass default: %v", c.Name, c.Annotations)
		}
		if cond := c.GetCondition("Drifted"); cond != nil {
			t.Fatalf("NodeClaim %s drifted before anything changed: %+v", c.Name, cond)
		}
	}

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		nc, err := e.Cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.Ctx, "default", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if nc.Spec.Tags == nil {
			nc.Spec.Tags = map[string]string{}
		}
		nc.Spec.Tags["team"] = "payments"
		_, err = e.Cluster.Tailor.AWSV1().EC2NodeClasses().Update(e.Ctx, nc, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		e.WaitDrifted(c.Name, string(tailoraws.DriftNodeClass))
	}
}
