package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	awsinformers "github.com/tailor-sh/tailor/pkg/generated/informers/externalversions/aws/v1"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// accountHint says what to change when an EC2NodeClass selects nothing in the emulated account:
// the usual cause is manifests written for a real cluster, whose discovery tags and node role
// name that cluster, run against the sandbox's default account.
func accountHint(reason, cluster string) string {
	switch reason {
	case "SubnetsNotFound", "SecurityGroupsNotFound":
		return fmt.Sprintf("the sandbox's subnets and security groups are tagged karpenter.sh/discovery: %s; for manifests written for cluster NAME, run tailor sandbox --cluster-name NAME", cluster)
	case "RoleNotFound":
		return fmt.Sprintf("the sandbox's account has the node role KarpenterNodeRole-%s; for manifests written for cluster NAME, run tailor sandbox --cluster-name NAME", cluster)
	}
	return ""
}

// readyWithHint is the class's Ready condition for the sandbox's report and story, with the hint
// where the account explains it.
func readyWithHint(nc *awsv1.EC2NodeClass, cluster string) sandbox.NodeClassReport {
	r := sandbox.NodeClassReport{Name: nc.Name, Ready: string(metav1.ConditionUnknown)}
	c := nc.GetCondition(awsv1.ConditionTypeReady)
	if c == nil {
		return r
	}
	r.Ready, r.Message = string(c.Status), c.Message
	if c.Status != metav1.ConditionTrue {
		r.Message = fmt.Sprintf("%s: %s", c.Reason, c.Message)
		if hint := accountHint(c.Reason, cluster); hint != "" {
			r.Message += " (" + hint + ")"
		}
	}
	return r
}

// narrateNodeClasses tells when an EC2NodeClass turns Ready or not Ready, and why.
func (s *sandboxCloud) narrateNodeClasses(ctx context.Context, cluster *sandbox.Cluster) {
	informer := awsinformers.NewEC2NodeClassInformer(cluster.Tailor, 0, cache.Indexers{})
	told := map[string]string{} // the informer calls handlers one at a time
	tell := func(obj any) {
		nc, ok := obj.(*awsv1.EC2NodeClass)
		if !ok {
			return
		}
		r := readyWithHint(nc, s.account.cluster)
		if r.Ready == string(metav1.ConditionUnknown) || told[nc.Name] == r.Ready+r.Message {
			return
		}
		told[nc.Name] = r.Ready + r.Message
		if r.Ready == string(metav1.ConditionTrue) {
			say("ec2nodeclass %s ready", nc.Name)
		} else {
			say("ec2nodeclass %s not ready: %s", nc.Name, r.Message)
		}
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: tell, UpdateFunc: func(_, obj any) { tell(obj) }})
	go informer.Run(ctx.Done())
}

// resolved says whether every EC2NodeClass has a Ready condition. The fake cloud resolves no
// class, so there it is always true.
func (s *sandboxCloud) resolved(ctx context.Context, cluster *sandbox.Cluster) bool {
	if s.provider == nil {
		return true
	}
	classes, err := cluster.Tailor.AWSV1().EC2NodeClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for i := range classes.Items {
		if classes.Items[i].GetCondition(awsv1.ConditionTypeReady) == nil {
			return false
		}
	}
	return true
}
