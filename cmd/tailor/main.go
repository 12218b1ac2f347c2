// Command tailor is Tailor's user CLI. `tailor sandbox` runs a whole cluster, a simulated fleet
// and Tailor in one process; `tailor plan` shows, offline, what Tailor would launch for a set of
// manifests; `tailor top` watches a cluster's fleet, its cost and Tailor's decisions live;
// `tailor doctor` checks a cluster and its AWS account for what Tailor needs.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tailor:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "tailor",
		Short:         "Tailor: a node autoscaler built into kube-scheduler",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	addLogFlags(root.PersistentFlags())
	// cobra shows every flag of pflag's global set; the only one there is component-base's
	// --version, registered when its package loads, which prints Kubernetes' version and only in
	// a binary that asks it to: not this one.
	if f := pflag.CommandLine.Lookup("version"); f != nil {
		f.Hidden = true
	}
	root.AddCommand(newSandboxCommand())
	root.AddCommand(newPlanCommand())
	root.AddCommand(newTopCommand())
	root.AddCommand(newDoctorCommand())
	return root
}
