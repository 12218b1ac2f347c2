package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/interruption"
	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
	"github.com/tailor-sh/tailor/pkg/aws/resolve"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/controllers"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/pkg/sandbox/awscloud"
)

// awsCluster and awsQueue match examples/: its EC2NodeClass selects subnets and security groups
// tagged karpenter.sh/discovery=tailor and names the role KarpenterNodeRole-tailor.
const (
	awsCluster = "tailor"
	awsQueue   = "tailor-e2e-interruptions"
)

// awsEnv is a cluster whose cloud is the real AWS provider against the emulator, with the
// provider's own controller (EC2NodeClass status) running; the operator consumes the
// interruption queue through the provider's cloud.InterruptionSource.
type awsEnv struct {
	*env
	emu      *emulator.Emulator
	provider *tailoraws.Provider
	// interrupted receives every interruption notice the consumer has handled.
	interrupted chan handledNotice
}

type handledNotice struct {
	ev         eventbridge.Event
	providerID string
}

func newAWSEnv(t *testing.T) *awsEnv {
	t.Helper()
	return newAWSEnvFor(t, awsCluster, emulator.Region)
}

// newAWSEnvFor is newAWSEnv with the emulated account set up for another cluster and region, as
// `tailor sandbox --cluster-name --region` does.
func newAWSEnvFor(t *testing.T, clusterName, region string) *awsEnv {
	t.Helper()
	return newAWSEnvWith(t, clusterName, region, nil)
}

// newAWSEnvWith is newAWSEnvFor with Tailor plugin args (sandbox.Options.TailorArgs).
func newAWSEnvWith(t *testing.T, clusterName, region string, tailorArgs map[string]any) *awsEnv {
	t.Helper()
	return newAWSEnvTuned(t, clusterName, region, tailorArgs, nil)
}

// newAWSEnvTuned is newAWSEnvWith with provider options changed by tune and, if given, the
// sandbox's options changed by with.
func newAWSEnvTuned(t *testing.T, clusterName, region string, tailorArgs map[string]any, tune func(*tailoraws.Options),
	with ...func(*sandbox.Options)) *awsEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e tests start a control plane; skipped in -short mode")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background())
	e := &awsEnv{env: &env{t: t, ctx: ctx, clock: &sandbox.OffsetClock{}}, interrupted: make(chan handledNotice, 16)}
	popts := tailoraws.Options{RetryMaxBackoff: 100 * time.Millisecond,
		OnInterruption: func(_ context.Context, ev eventbridge.Event, providerID string) {
			e.interrupted <- handledNotice{ev, providerID}
		}}
	if tune != nil {
		tune(&popts)
	}
	aws := awscloud.Start(awscloud.Options{Clock: e.clock, ClusterName: clusterName, Region: region, Queue: awsQueue, Provider: popts})
	e.emu = aws.Emulator
	t.Cleanup(aws.Close)
	var err error
	if e.provider, err = aws.NewProvider(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	opts := sandbox.Options{Dir: t.TempDir(), Clock: e.clock, TailorArgs: tailorArgs, NewCloud: aws.NewCloud(e.provider)}
	for _, f := range with {
		f(&opts)
	}
	cluster, err := sandbox.Start(ctx, t, opts)
	if err != nil {
		cancel()
		t.Fatalf("starting the sandbox: %v", err)
	}
	e.cluster = cluster
	t.Cleanup(func() {
		cluster.Stop()
		cancel()
	})
	t.Cleanup(e.expectNoStranded)
	// The controllers stop before the API server does (cleanups run last-registered first), so
	// their watches do not hold up its shutdown.
	ctrlCtx, stopControllers := context.WithCancel(ctx)
	t.Cleanup(stopControllers)
	awscloud.RunControllers(ctrlCtx, e.provider, controllers.Deps{Kube: cluster.Kube, Clients: cluster.Tailor}, func(err error) {
		t.Errorf("provider controller: %v", err)
	})
	return e
}

// TestAWSProviderRunsTheExamples: the examples, unchanged, run on the AWS provider against the
// emulator. The EC2NodeClass's role gets an instance profile and the class turns Ready with what
// it selected; instances become Nodes named by their private DNS names, matched to their
// NodeClaims by provider ID, labelled and priced. A spot interruption sent through SQS is
// consumed: the offering is avoided, the NodeClaim deleted, its pods run elsewhere and the
// instance is terminated.
func TestAWSProviderRunsTheExamples(t *testing.T) {
	e := newAWSEnv(t)
	if err := sandbox.ApplyFiles(e.ctx, e.cluster.Config, []string{"../../examples"}, nil); err != nil {
		t.Fatal(err)
	}
	e.waitRunning("app=inflate", 5, 2*time.Minute)

	profile := resolve.InstanceProfileName(awsCluster, emulator.Region, emulator.NodeRoleName(awsCluster))
	e.waitFor("EC2NodeClass default Ready", time.Minute, func() (bool, string) {
		nc, err := e.cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.ctx, "default", metav1.GetOptions{})
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
	broken, err := e.cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	broken = &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "no-role"}, Spec: *broken.Spec.DeepCopy()}
	broken.Spec.Role = "KarpenterNodeRole-nowhere"
	if _, err := e.cluster.Tailor.AWSV1().EC2NodeClasses().Create(e.ctx, broken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("EC2NodeClass no-role to say why it is not Ready", time.Minute, func() (bool, string) {
		nc, err := e.cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.ctx, "no-role", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := nc.GetCondition(awsv1.ConditionTypeReady)
		return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == "RoleNotFound", fmt.Sprintf("%+v", ready)
	})

	state, err := e.cluster.Read(e.ctx)
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
	pools, err := e.cluster.Tailor.KarpenterV1().NodePools().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range state.Report(e.ctx, e.cluster.Cloud, pools.Items).Nodes {
		if n.PricePerHour <= 0 {
			t.Errorf("the report does not price node %s (%s %s %s)", n.Name, n.InstanceType, n.Zone, n.CapacityType)
		}
	}

	e.interruptSpot(t, state)
}

// interruptSpot sends a spot interruption for the node the pods run on, as EventBridge would,
// and follows it through.
func (e *awsEnv) interruptSpot(t *testing.T, state *sandbox.State) {
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

	cfg, err := tailoraws.SDKConfig(e.ctx, tailoraws.Options{Endpoint: e.emu.URL()})
	if err != nil {
		t.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	url, err := interruption.QueueURL(e.ctx, client, awsQueue)
	if err != nil {
		t.Fatal(err)
	}
	body, err := eventbridge.Message(eventbridge.Notice{Kind: eventbridge.KindSpotInterruption, InstanceID: instanceID,
		Region: emulator.Region, Account: emulator.AccountID, Time: e.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}

	select {
	case got := <-e.interrupted:
		if got.ev.Kind != eventbridge.KindSpotInterruption || got.ev.InstanceID != instanceID || got.providerID != victim.Spec.ProviderID {
			t.Fatalf("the consumer handled %+v for %q, want the spot notice for %s", got.ev, got.providerID, victim.Spec.ProviderID)
		}
	case <-time.After(time.Minute):
		t.Fatal("the interruption consumer did not handle the notice within a minute")
	}
	if o := e.offering(t, offering); o.Available {
		t.Errorf("offering %v is still available after its spot interruption", offering)
	}
	e.waitFor("the notice to leave the queue", 30*time.Second, func() (bool, string) {
		visible, inFlight := e.emu.QueueDepth(awsQueue)
		return visible+inFlight == 0, fmt.Sprintf("%d visible, %d in flight", visible, inFlight)
	})

	pods := e.waitRunningElsewhere("app=inflate", 5, victim.Name, 2*time.Minute)
	for _, p := range pods {
		if before[p.Spec.NodeName] {
			// A node of the same offering launched before the notice may take them: what must
			// not happen is a launch into the offering the notice marked unavailable.
			continue
		}
		n, err := e.cluster.Kube.CoreV1().Nodes().Get(e.ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Labels[corev1.LabelInstanceTypeStable] == offering.InstanceType && n.Labels[corev1.LabelTopologyZone] == offering.Zone &&
			n.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot {
			t.Errorf("pod %s was replaced onto a node launched in the interrupted offering %v", p.Name, offering)
		}
	}
	e.waitFor("the interrupted instance to be terminated", time.Minute, func() (bool, string) {
		for _, inst := range e.emu.Instances() {
			if inst.ID == instanceID {
				return inst.State == "terminated", inst.State
			}
		}
		return true, "forgotten"
	})
}

// waitRunningElsewhere waits until want pods of the selector run, none of them on node.
func (e *awsEnv) waitRunningElsewhere(selector string, want int, node string, timeout time.Duration) []corev1.Pod {
	var pods []corev1.Pod
	e.waitFor(fmt.Sprintf("%d pods %q Running off %s", want, selector, node), timeout, func() (bool, string) {
		list, err := e.cluster.Kube.CoreV1().Pods("").List(e.ctx, metav1.ListOptions{LabelSelector: selector})
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

// offering reads one offering of the examples' NodePool from the provider.
func (e *awsEnv) offering(t *testing.T, key cloud.OfferingKey) cloud.Offering {
	t.Helper()
	pool, err := e.cluster.Tailor.KarpenterV1().NodePools().Get(e.ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	types, err := e.provider.InstanceTypes(e.ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		for _, o := range it.Offerings {
			if it.Name == key.InstanceType && o.Zone == key.Zone && o.CapacityType == key.CapacityType {
				return o
			}
		}
	}
	t.Fatalf("no offering %v", key)
	return cloud.Offering{}
}
