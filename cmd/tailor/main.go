// Command tailor is Tailor's user CLI. `tailor sandbox` runs a whole cluster, a simulated fleet
// and Tailor in one process; `tailor plan` shows, offline, what Tailor would launch for a set of
// manifests.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

func main() {
	root := &cobra.Command{
		Use:           "tailor",
		Short:         "Tailor: a node autoscaler built into kube-scheduler",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	root.PersistentFlags().AddGoFlagSet(klogFlags)
	root.AddCommand(newSandboxCommand())
	root.AddCommand(newPlanCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tailor:", err)
		os.Exit(1)
	}
}
