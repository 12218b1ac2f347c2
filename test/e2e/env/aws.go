package env

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
	"github.com/tailor-sh/tailor/pkg/cloud/controllers"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/pkg/sandbox/awscloud"
)

// AWSCluster and AWSQueue match examples/: its EC2NodeClass selects subnets and security groups
// tagged karpenter.sh/discovery=tailor and names the role KarpenterNodeRole-tailor.
const (
	AWSCluster = "tailor"
	AWSQueue   = "tailor-e2e-interruptions"
)

// AWS is a cluster whose cloud is the real AWS provider against the emulator, with the
// provider's own controller (EC2NodeClass status) running; the operator consumes the
// interruption queue through the provider's cloud.InterruptionSource.
type AWS struct {
	*Env
	Emu      *emulator.Emulator
	Provider *tailoraws.Provider
	// Interrupted receives every interruption notice the consumer has handled.
	Interrupted chan HandledNotice
}

// HandledNotice is an interruption notice the provider's consumer handled, and the instance it
// named.
type HandledNotice struct {
	Ev         eventbridge.Event
	ProviderID string
}

// NewAWS starts a cluster on the AWS provider against the emulator, with the emulated account set
// up as examples/ expects it (cluster AWSCluster, the emulator's region); in -short mode it skips
// the test.
func NewAWS(t *testing.T) *AWS {
	t.Helper()
	return NewAWSFor(t, AWSCluster, emulator.Region)
}

// NewAWSFor is NewAWS with the emulated account set up for another cluster and region, as
// `tailor sandbox --cluster-name --region` does.
func NewAWSFor(t *testing.T, clusterName, region string) *AWS {
	t.Helper()
	return NewAWSWith(t, clusterName, region, nil)
}

// NewAWSWith is NewAWSFor with Tailor plugin args (sandbox.Options.TailorArgs).
func NewAWSWith(t *testing.T, clusterName, region string, tailorArgs map[string]any) *AWS {
	t.Helper()
	return NewAWSTuned(t, clusterName, region, tailorArgs, nil)
}

// NewAWSTuned is NewAWSWith with provider options changed by tune and, if given, the
// sandbox's options changed by with.
func NewAWSTuned(t *testing.T, clusterName, region string, tailorArgs map[string]any, tune func(*tailoraws.Options),
	with ...func(*sandbox.Options)) *AWS {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e tests start a control plane; skipped in -short mode")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background())
	e := &AWS{Env: &Env{T: t, Ctx: ctx, Clock: &sandbox.OffsetClock{}}, Interrupted: make(chan HandledNotice, 16)}
	popts := tailoraws.Options{RetryMaxBackoff: 100 * time.Millisecond,
		OnInterruption: func(_ context.Context, ev eventbridge.Event, providerID string) {
			e.Interrupted <- HandledNotice{ev, providerID}
		}}
	if tune != nil {
		tune(&popts)
	}
	aws := awscloud.Start(awscloud.Options{Clock: e.Clock, ClusterName: clusterName, Region: region, Queue: AWSQueue, Provider: popts})
	e.Emu = aws.Emulator
	t.Cleanup(aws.Close)
	var err error
	if e.Provider, err = aws.NewProvider(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	opts := sandbox.Options{Dir: t.TempDir(), Clock: e.Clock, TailorArgs: tailorArgs, NewCloud: aws.NewCloud(e.Provider)}
	e.StartCluster(ctx, cancel, opts, with)
	// The controllers stop before the API server does (cleanups run last-registered first), so
	// their watches do not hold up its shutdown.
	ctrlCtx, stopControllers := context.WithCancel(ctx)
	t.Cleanup(stopControllers)
	awscloud.RunControllers(ctrlCtx, e.Provider, controllers.Deps{Kube: e.Cluster.Kube, Clients: e.Cluster.Tailor}, func(err error) {
		t.Errorf("provider controller: %v", err)
	})
	return e
}

// ClaimInstances maps each NodeClaim to its provider ID.
func (e *AWS) ClaimInstances() map[string]string {
	e.T.Helper()
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range claims.Items {
		out[c.Name] = c.Status.ProviderID
	}
	return out
}

// AWSClass is an EC2NodeClass selecting the examples' subnets, security groups and role, with the
// AMI alias and user data given.
func AWSClass(name, alias string, userData *string) *awsv1.EC2NodeClass {
	discovery := map[string]string{emulator.DiscoveryTag: AWSCluster}
	return &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: alias}},
		Role:                       emulator.NodeRoleName(AWSCluster),
		UserData:                   userData,
	}}
}

// AWSPool is a NodePool (see NodePool) whose nodes are launched from the EC2NodeClass class.
func AWSPool(name, class string) *karpv1.NodePool {
	np := NodePool(name)
	np.Spec.Template.Spec.NodeClassRef.Name = class
	return np
}

// CreateClass creates nc.
func (e *AWS) CreateClass(nc *awsv1.EC2NodeClass) {
	e.T.Helper()
	if _, err := e.Cluster.Tailor.AWSV1().EC2NodeClasses().Create(e.Ctx, nc, metav1.CreateOptions{}); err != nil {
		e.T.Fatalf("creating EC2NodeClass %s: %v", nc.Name, err)
	}
}
