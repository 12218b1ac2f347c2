package aws

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/interruption"
	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
	"github.com/tailor-sh/tailor/pkg/aws/resolve"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// TestAWSProviderRunsTheExamples: the examples, unchanged, run on the AWS provider against the
// emulator. The EC2NodeClass's role gets an instance profile and the class turns Ready with what
// it selected; instances become Nodes named by their private DNS names, matched to their
// NodeClaims by provider ID, labelled and priced. A spot interruption sent through SQS is
// consumed: the offering is avoided, the NodeClaim deleted, its pods run elsewhere and the
// instance is terminated.
func TestAWSProviderRunsTheExamples(t *testing.T) {
	e := env.NewAWS(t)
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{env.RepoPath("examples")}, nil); err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=inflate", 5, 2*time.Minute)

	profile := resolve.InstanceProfileName(env.AWSCluster, emulator.Region, emulator.NodeRoleName(env.AWSCluster))
	e.WaitFor("EC2NodeClass default Ready", time.Minute, func() (bool, string) {
		nc, err := e.Cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.Ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := nc.GetCondition(awsv1.ConditionTypeReady)
		s := nc.Status
		return ready != nil && ready.Status == metav1.ConditionTrue && len(s.Subnets) == 3 && len(s.SecurityGroups) == 1 &&
				len(s.AMIs) > 0 && s.InstanceProfile == profile,
			fmt.Sprintf("ready %+v, status %+v", ready, s)
	})

	// A class whose role does not exist says so in its Ready condition.
	broken, err := e.Cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.Ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	broken = &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "no-role"}, Spec: *broken.Spec.DeepCopy()}
	broken.Spec.Role = "KarpenterNodeRole-nowhere"
	if _, err := e.Cluster.Tailor.AWSV1().EC2NodeClasses().Create(e.Ctx, broken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("EC2NodeClass no-role to say why it is not Ready", time.Minute, func() (bool, string) {
		nc, err := e.Cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.Ctx, "no-role", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := nc.GetCondition(awsv1.ConditionTypeReady)
		return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == "RoleNotFound", fmt.Sprintf("%+v", ready)
	})

	state, err := e.Cluster.Read(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	byProviderID := map[string]*karpv1.NodeClaim{}
	for _, c := range state.Claims {
		byProviderID[c.Status.ProviderID] = &c
	}
	for _, n := range state.Nodes {
		claim := byProviderID[n.Spec.ProviderID]
		if !strings.HasPrefix(n.Spec.ProviderID, "aws:///") || claim == nil || claim.Status.NodeName != n.Name || !claim.IsTrue(karpv1.ConditionTypeInitialized) {
			t.Errorf("node %s (provider ID %q) is not its NodeClaim's: %+v", n.Name, n.Spec.ProviderID, claim)
		}
		if !strings.HasSuffix(n.Name, ".compute.internal") {
			t.Errorf("node %s is not named by its private DNS name", n.Name)
		}
		for _, key := range []string{awsv1.LabelInstanceFamily, awsv1.LabelInstanceCPU, awsv1.LabelInstanceMemory, awsv1.LabelNodeClass,
			karpv1.NodePoolLabelKey, karpv1.CapacityTypeLabelKey, corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone} {
			if n.Labels[key] == "" {
				t.Errorf("node %s lacks label %s: %v", n.Name, key, n.Labels)
			}
		}
	}
	pools, err := e.Cluster.Tailor.KarpenterV1().NodePools().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range state.Report(e.Ctx, e.Cluster.Cloud, pools.Items).Nodes {
		if n.PricePerHour <= 0 {
			t.Errorf("the report does not price node %s (%s %s %s)", n.Name, n.InstanceType, n.Zone, n.CapacityType)
		}
	}

	interruptSpot(e, t, state)
}

// interruptSpot sends a spot interruption for the node the pods run on, as EventBridge would,
// and follows it through.
func interruptSpot(e *env.AWS, t *testing.T, state *sandbox.State) {
	var victim corev1.Node
	for _, p := range state.Pods {
		for _, n := range state.Nodes {
			if n.Name == p.Spec.NodeName && n.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot {
				victim = n
			}
		}
	}
	if victim.Name == "" {
		t.Fatalf("no pod runs on a spot node: %v", state.Nodes)
	}
	before := map[string]bool{}
	for _, n := range state.Nodes {
		before[n.Name] = true
	}
	instanceID := victim.Spec.ProviderID[strings.LastIndex(victim.Spec.ProviderID, "/")+1:]
	offering := cloud.OfferingKey{InstanceType: victim.Labels[corev1.LabelInstanceTypeStable], Zone: victim.Labels[corev1.LabelTopologyZone],
		CapacityType: karpv1.CapacityTypeSpot}

	cfg, err := tailoraws.SDKConfig(e.Ctx, tailoraws.Options{Endpoint: e.Emu.URL()})
	if err != nil {
		t.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	url, err := interruption.QueueURL(e.Ctx, client, env.AWSQueue)
	if err != nil {
		t.Fatal(err)
	}
	body, err := eventbridge.Message(eventbridge.Notice{Kind: eventbridge.KindSpotInterruption, InstanceID: instanceID,
		Region: emulator.Region, Account: emulator.AccountID, Time: e.Clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.SendMessage(e.Ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}

	select {
	case got := <-e.Interrupted:
		if got.Ev.Kind != eventbridge.KindSpotInterruption || got.Ev.InstanceID != instanceID || got.ProviderID != victim.Spec.ProviderID {
			t.Fatalf("the consumer handled %+v for %q, want the spot notice for %s", got.Ev, got.ProviderID, victim.Spec.ProviderID)
		}
	case <-time.After(time.Minute):
		t.Fatal("the interruption consumer did not handle the notice within a minute")
	}
	if o := providerOffering(e, t, offering); o.Available {
		t.Errorf("offering %v is still available after its spot interruption", offering)
	}
	e.WaitFor("the notice to leave the queue", 30*time.Second, func() (bool, string) {
		visible, inFlight := e.Emu.QueueDepth(env.AWSQueue)
		return visible+inFlight == 0, fmt.Sprintf("%d visible, %d in flight", visible, inFlight)
	})

	pods := waitRunningElsewhere(e, "app=inflate", 5, victim.Name, 2*time.Minute)
	for _, p := range pods {
		if before[p.Spec.NodeName] {
			// A node of the same offering launched before the notice may take them: what must
			// not happen is a launch into the offering the notice marked unavailable.
			continue
		}
		n, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Labels[corev1.LabelInstanceTypeStable] == offering.InstanceType && n.Labels[corev1.LabelTopologyZone] == offering.Zone &&
			n.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot {
			t.Errorf("pod %s was replaced onto a node launched in the interrupted offering %v", p.Name, offering)
		}
	}
	e.WaitFor("the interrupted instance to be terminated", time.Minute, func() (bool, string) {
		for _, inst := range e.Emu.Instances() {
			if inst.ID == instanceID {
				return inst.State == "terminated", inst.State
			}
		}
		return true, "forgotten"
	})
}

// waitRunningElsewhere waits until want pods of the selector run, none of them on node.
func waitRunningElsewhere(e *env.AWS, selector string, want int, node string, timeout time.Duration) []corev1.Pod {
	var pods []corev1.Pod
	e.WaitFor(fmt.Sprintf("%d pods %q Running off %s", want, selector, node), timeout, func() (bool, string) {
		list, err := e.Cluster.Kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" && p.Spec.NodeName != node && p.DeletionTimestamp == nil {
				running++
			}
		}
		pods = list.Items
		return running == want && len(list.Items) == want, fmt.Sprintf("%d of %d pods running elsewhere", running, len(list.Items))
	})
	return pods
}

// providerOffering reads one offering of the examples' NodePool from the provider.
func providerOffering(e *env.AWS, t *testing.T, key cloud.OfferingKey) cloud.Offering {
	t.Helper()
	pool, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	types, err := e.Provider.InstanceTypes(e.Ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := cloud.FindOffering(types, key)
	if !ok {
		t.Fatalf("no offering %v", key)
	}
	return o
}
