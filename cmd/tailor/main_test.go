package main

import (
	"bytes"
	"strings"
	"testing"
)

// Every command's --help shows its own flags and -v, and none of klog's other flags.
func TestHelpShowsTailorsFlagsNotKlogs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{args: []string{"--help"}, want: []string{"sandbox", "plan", "top"}},
		{args: []string{"top", "--help"}, want: []string{"--kubeconfig", "--once", "--output", "--sort", "--nodepool", "--selector", "--prices"}},
		// ...and the sandbox's names what of kube-controller-manager runs and what does not.
		{args: []string{"sandbox", "--help"}, want: []string{"--apply", "--cloud", "--cluster-name", "--until-settled",
			"garbage collector", "namespace", "CronJob", "TTL-after-finished", "EndpointSlice", "It does not run", "node lifecycle"}},
		{args: []string{"sandbox", "interrupt", "--help"}, want: []string{"--kubeconfig", "--node"}},
		{args: []string{"plan", "--help"}, want: []string{"--filename", "--output", "--region"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRootCommand()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(tc.args)
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			help := out.String()
			for _, w := range append(tc.want, "-v, --v Level", "--vmodule") {
				if !strings.Contains(help, w) {
					t.Errorf("help does not show %q:\n%s", w, help)
				}
			}
			for _, klogFlag := range []string{"--log_dir", "--log_file", "--alsologtostderr", "--logtostderr", "--stderrthreshold",
				"--add_dir_header", "--skip_headers", "--one_output", "--log_backtrace_at", "--version"} {
				if strings.Contains(help, klogFlag) {
					t.Errorf("help shows %s:\n%s", klogFlag, help)
				}
			}
		})
	}
}
