package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/interruption"
	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/controllers"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/cloud/fake/kubelet"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/pkg/sandbox/awscloud"
)

const (
	// sandboxClusterName is the default cluster the emulated account is set up for: examples/
	// selects its subnets and security groups by karpenter.sh/discovery=tailor and uses
	// KarpenterNodeRole-tailor. --cluster-name sets up the account for another.
	sandboxClusterName = "tailor"
	// sandboxQueue is the emulated interruption queue, which `tailor sandbox interrupt` writes to.
	sandboxQueue = "tailor-sandbox-interruptions"
	// endpointFile, beside the kubeconfig, tells other commands where the running emulator is
	// (first line), which region it emulates (second line) and the cluster name its account is
	// set up for (third line).
	endpointFile = "emulator-endpoint"
)

// sandboxCloud is what the sandbox launches capacity in: the AWS provider against the in-process
// emulator (aws), or the in-memory fake (fake).
type sandboxCloud struct {
	name     string
	account  account
	aws      *awscloud.Cloud
	emu      *emulator.Emulator
	provider *tailoraws.Provider
	written  string
}

// account is who the sandbox's cloud is set up for: the cluster its subnets, security groups
// and node role are named after, and the region its zones are in.
type account struct{ cluster, region string }

// check refuses a cluster or region no EC2NodeClass could be written for.
func (a account) check() error {
	if a.cluster == "" {
		return fmt.Errorf("--cluster-name is empty: give the cluster name your EC2NodeClass selects (karpenter.sh/discovery) and its role names")
	}
	if _, err := fake.RegionZones(a.region); err != nil {
		return fmt.Errorf("--region: %w", err)
	}
	return nil
}

func newSandboxCloud(ctx context.Context, name string, acct account) (*sandboxCloud, error) {
	if err := acct.check(); err != nil {
		return nil, err
	}
	s := &sandboxCloud{name: name, account: acct}
	switch name {
	case "fake":
		return s, nil
	case "aws":
	default:
		return nil, fmt.Errorf("--cloud=%q: the clouds are aws (the AWS provider on an in-process emulator) and fake", name)
	}
	// The queue gets its access policy and EventBridge rules, as `tailor doctor` expects. The
	// endpoint and DNS IP only go into user data, which the emulated kubelets read for labels,
	// taints and reservations; they never dial the API server through it.
	s.aws = awscloud.Start(awscloud.Options{ClusterName: acct.cluster, Region: acct.region, Queue: sandboxQueue, QueueRules: true,
		Provider: tailoraws.Options{ClusterEndpoint: "https://sandbox.tailor.internal", ClusterDNS: []string{"10.96.0.10"},
			OnInterruption: narrateInterruption}})
	s.emu = s.aws.Emulator
	var err error
	if s.provider, err = s.aws.NewProvider(ctx); err != nil {
		s.aws.Close()
		return nil, err
	}
	return s, nil
}

// NewCloud is sandbox.Options.NewCloud.
func (s *sandboxCloud) NewCloud(kube kubernetes.Interface) cloud.CloudProvider {
	if s.provider == nil {
		return narratedCloud{fake.New(fake.Options{Clock: clock.RealClock{}, ClusterName: s.account.cluster, Region: s.account.region,
			Joiner: &kubelet.Joiner{Client: kube}})}
	}
	return narratedCloud{s.aws.NewCloud(s.provider)(kube)}
}

// start runs the provider's own controllers (EC2NodeClass status) and tells other commands where
// the emulator is. The operator starts them too once it leads; the provider's guard makes the
// second start a no-op. The interruption queue is consumed by the operator alone.
func (s *sandboxCloud) start(ctx context.Context, cluster *sandbox.Cluster, kubeconfig string) error {
	if s.provider == nil {
		return nil
	}
	s.written = filepath.Join(filepath.Dir(kubeconfig), endpointFile)
	if err := os.WriteFile(s.written, []byte(s.emu.URL()+"\n"+s.account.region+"\n"+s.account.cluster+"\n"), 0o600); err != nil {
		return err
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cluster.Kube.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return err
	}
	deps := controllers.Deps{Kube: cluster.Kube, Clients: cluster.Tailor, Recorder: broadcaster.NewRecorder(scheme.Scheme, "tailor")}
	awscloud.RunControllers(ctx, s.provider, deps, func(err error) {
		klog.FromContext(ctx).Error(err, "AWS provider controller stopped")
	})
	s.narrateNodeClasses(ctx, cluster)
	say("cloud: AWS provider on the emulator at %s (SIMULATED: cluster %s, region %s, account %s)", s.emu.URL(), s.account.cluster, s.account.region, emulator.AccountID)
	say("  interrupt a node: tailor sandbox interrupt --kubeconfig %s --node NAME", kubeconfig)
	return nil
}

func (s *sandboxCloud) Close() {
	if s.written != "" {
		_ = os.Remove(s.written)
	}
	if s.aws != nil {
		s.aws.Close()
	}
}

// Controllers passes the provider's controllers through the narration, so that a host that
// starts cloud controllers (the operator, through controllers.Provider) sees them.
func (n narratedCloud) Controllers(deps controllers.Deps) []cloud.Runnable {
	if cp, ok := n.CloudProvider.(controllers.Provider); ok {
		return cp.Controllers(deps)
	}
	return nil
}

// HandleInterruptions passes the provider's interruption notices through the narration, so that
// the operator, which handles them (through cloud.InterruptionSource), sees them.
func (n narratedCloud) HandleInterruptions(ctx context.Context, handle cloud.InterruptionHandler) error {
	if src, ok := n.CloudProvider.(cloud.InterruptionSource); ok {
		return src.HandleInterruptions(ctx, handle)
	}
	<-ctx.Done()
	return nil
}

func narrateInterruption(_ context.Context, ev eventbridge.Event, providerID string) {
	if providerID == "" {
		say("interruption: %s for %s, which EC2 does not know", ev.Kind, ev.InstanceID)
		return
	}
	say("interruption: %s for %s handled", ev.Kind, providerID)
}

type interruptFlags struct {
	kubeconfig, node, kind, state string
}

// newInterruptCommand sends an EventBridge notice into a running sandbox's emulated queue,
// through the real SQS client, as EC2 would.
func newInterruptCommand() *cobra.Command {
	f := &interruptFlags{}
	cmd := &cobra.Command{
		Use:   "interrupt",
		Short: "Send an EC2 interruption notice for a node of a running sandbox (AWS emulator only)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return interrupt(cmd.Context(), f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", filepath.Join(os.TempDir(), "tailor-sandbox", "kubeconfig"), "the running sandbox's kubeconfig; "+endpointFile+" is read beside it")
	fs.StringVar(&f.node, "node", "", "the node (or its instance ID, i-...) to interrupt")
	fs.StringVar(&f.kind, "kind", "spot", "spot (interruption warning), rebalance (recommendation), health (scheduled change) or state-change")
	fs.StringVar(&f.state, "state", "stopping", "with --kind state-change: stopping, stopped, shutting-down or terminated")
	_ = cmd.MarkFlagRequired("node")
	return cmd
}

func interrupt(ctx context.Context, f *interruptFlags) error {
	kinds := map[string]eventbridge.Kind{"spot": eventbridge.KindSpotInterruption, "rebalance": eventbridge.KindRebalanceRecommendation,
		"health": eventbridge.KindScheduledChange, "state-change": eventbridge.KindInstanceStopping}
	kind, ok := kinds[f.kind]
	if !ok {
		return fmt.Errorf("--kind=%q: one of spot, rebalance, health, state-change", f.kind)
	}
	if kind == eventbridge.KindInstanceStopping && (f.state == "shutting-down" || f.state == "terminated") {
		kind = eventbridge.KindInstanceTerminating
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(f.kubeconfig), endpointFile))
	if err != nil {
		return fmt.Errorf("no running sandbox on the AWS emulator beside %s: %w", f.kubeconfig, err)
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return fmt.Errorf("%s beside %s is empty: is the sandbox starting?", endpointFile, f.kubeconfig)
	}
	endpoint, region := fields[0], emulator.Region
	if len(fields) > 1 {
		region = fields[1]
	}
	instanceID, err := instanceOf(ctx, f.kubeconfig, f.node)
	if err != nil {
		return err
	}
	body, err := eventbridge.Message(eventbridge.Notice{Kind: kind, InstanceID: instanceID, State: f.state,
		Region: region, Account: emulator.AccountID, Time: time.Now()})
	if err != nil {
		return err
	}
	cfg, err := tailoraws.SDKConfig(ctx, tailoraws.Options{Endpoint: endpoint, Region: region})
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(cfg)
	url, err := interruption.QueueURL(ctx, client, sandboxQueue)
	if err != nil {
		return err
	}
	out, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
	if err != nil {
		return fmt.Errorf("sending the notice: %w", err)
	}
	fmt.Printf("sent %s notice for %s (%s) to %s: message %s\n", kind, instanceID, f.node, url, aws.ToString(out.MessageId))
	return nil
}

// instanceOf finds the instance behind a node through its provider ID (aws:///<zone>/<id>).
func instanceOf(ctx context.Context, kubeconfig, node string) (string, error) {
	if strings.HasPrefix(node, "i-") {
		return node, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("node %s: %w", node, err)
	}
	id := n.Spec.ProviderID[strings.LastIndex(n.Spec.ProviderID, "/")+1:]
	if !strings.HasPrefix(n.Spec.ProviderID, "aws:///") || !strings.HasPrefix(id, "i-") {
		return "", fmt.Errorf("node %s has provider ID %q, not an EC2 instance's", node, n.Spec.ProviderID)
	}
	return id, nil
}
