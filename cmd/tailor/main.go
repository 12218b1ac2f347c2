// Command tailor is Tailor's user CLI. `tailor sandbox` runs a whole cluster, a simulated fleet
// and Tailor in one process.
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
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tailor:", err)
		os.Exit(1)
	}
}
