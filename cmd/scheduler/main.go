// Command scheduler is Tailor's production binary: kube-scheduler with the Tailor plugin, and
// Tailor's provisioner and controllers in the same process. It takes every kube-scheduler flag,
// plus Tailor's own under "Tailor flags".
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/version/verflag"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/utils/clock"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/operator"

	// Register the default metrics and client-go adapters like kube-scheduler does.
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
)

func main() {
	os.Exit(cli.Run(newCommand()))
}

// newCommand mirrors kube-scheduler's own command, so every flag and the config file work the
// same; it differs only in what runs: operator.Run instead of app.Run.
func newCommand() *cobra.Command {
	opts := options.NewOptions()
	cloudName := "fake"
	clusterName := "tailor"
	var awsOpts awsFlags
	cmd := &cobra.Command{
		Use:  "tailor-scheduler",
		Long: "kube-scheduler with Tailor: pods that fit no node get new nodes launched for them.",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return opts.ComponentGlobalsRegistry.Set()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			fg := opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
			if err := logsapi.ValidateAndApply(opts.Logs, fg); err != nil {
				return err
			}
			if mfg, ok := fg.(featuregate.MutableFeatureGate); ok {
				mfg.AddMetrics()
			}
			cliflag.PrintFlags(cmd.Flags())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-server.SetupSignalHandler()
				cancel()
			}()
			return operator.Run(ctx, opts, func(kube kubernetes.Interface) (cloud.CloudProvider, error) {
				return newCloud(ctx, cloudName, clusterName, awsOpts, kube)
			}, clock.RealClock{})
		},
		Args: cobra.NoArgs,
	}
	nfs := opts.Flags
	verflag.AddFlags(nfs.FlagSet("global"))
	globalflag.AddGlobalFlags(nfs.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	tfs := nfs.FlagSet("Tailor")
	tfs.StringVar(&cloudName, "cloud", cloudName, "cloud to launch capacity in: aws (EC2) or fake (simulated, in memory)")
	tfs.StringVar(&clusterName, "cluster-name", clusterName, "name of the cluster, used to tag and find its instances (with --cloud aws: the EKS cluster name)")
	tfs.StringVar(&awsOpts.endpoint, "aws-endpoint", "", "with --cloud aws: send every AWS API call to this URL (an emulator) with test credentials; empty means AWS itself, with the default credential chain")
	tfs.StringVar(&awsOpts.region, "aws-region", "", "with --cloud aws: the AWS region (default: AWS_REGION or the shared config's)")
	tfs.StringVar(&awsOpts.clusterEndpoint, "cluster-endpoint", "", "with --cloud aws: the API server URL new nodes join (the EKS cluster endpoint); required against AWS")
	tfs.StringVar(&awsOpts.interruptionQueue, "interruption-queue", "", "with --cloud aws: name of the SQS queue EventBridge sends EC2 interruption notices to; empty disables interruption handling")
	fs := cmd.Flags()
	for _, f := range nfs.FlagSets {
		fs.AddFlagSet(f)
	}
	return cmd
}

// awsFlags configure --cloud aws.
type awsFlags struct {
	endpoint, region, clusterEndpoint, interruptionQueue string
}

// newCloud builds the named cloud. The fake one registers a kwok Node for each instance it
// "launches", so it is useful only in a cluster where kwok plays those nodes' kubelets.
func newCloud(ctx context.Context, name, cluster string, a awsFlags, kube kubernetes.Interface) (cloud.CloudProvider, error) {
	switch name {
	case "fake":
		return fake.New(fake.Options{Clock: clock.RealClock{}, ClusterName: cluster, Joiner: &fake.KubeletJoiner{Client: kube}}), nil
	case "aws":
		if a.endpoint == "" && a.clusterEndpoint == "" {
			return nil, fmt.Errorf("--cloud=aws needs --cluster-endpoint: the API server URL new nodes join (aws eks describe-cluster --query cluster.endpoint)")
		}
		opts := tailoraws.Options{ClusterName: cluster, ClusterEndpoint: a.clusterEndpoint, Region: a.region, Endpoint: a.endpoint,
			InterruptionQueue: a.interruptionQueue, NodeClasses: tailoraws.NodeClassesFromKube(kube)}
		discoverCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		tailoraws.ClusterDefaults(discoverCtx, kube, &opts)
		return tailoraws.New(ctx, opts)
	default:
		return nil, fmt.Errorf("--cloud=%q: unknown cloud; the choices are: aws, fake", name)
	}
}
