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
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/utils/clock"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/cloud/fake/kubelet"
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
	tf := newTailorFlags()
	cmd := &cobra.Command{
		Use:  "tailor-scheduler",
		Long: "kube-scheduler with Tailor: pods that fit no node get new nodes launched for them.",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return opts.ComponentGlobalsRegistry.Set()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if err := tf.validate(); err != nil {
				return err
			}
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
				return newCloud(ctx, tf.cloud, tf.cluster(), tf.aws, kube)
			}, clock.RealClock{}, operator.WithWebhook(*tf.webhook))
		},
		Args: cobra.NoArgs,
	}
	nfs := opts.Flags
	verflag.AddFlags(nfs.FlagSet("global"))
	globalflag.AddGlobalFlags(nfs.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	tf.addFlags(nfs.FlagSet("Tailor"))
	fs := cmd.Flags()
	for _, f := range nfs.FlagSets {
		fs.AddFlagSet(f)
	}
	// --help prints the flags in their sections, as kube-scheduler's does.
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *nfs, cols)
	return cmd
}

// newCloud builds the named cloud. The fake one registers a kwok Node for each instance it
// "launches", so it is useful only in a cluster where kwok plays those nodes' kubelets.
func newCloud(ctx context.Context, name, cluster string, a awsFlags, kube kubernetes.Interface) (cloud.CloudProvider, error) {
	switch name {
	case "fake":
		return fake.New(fake.Options{Clock: clock.RealClock{}, ClusterName: cluster, Joiner: &kubelet.Joiner{Client: kube}}), nil
	case "aws":
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
