package harness

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/klog/v2"
)

// KlogEnv holds klog flags for a replay that needs Tailor's detailed logs, e.g.
// HARNESS_KLOG="-vmodule=provisioner=3,nominate=2,beside=3": the plans' pods per claim, without
// the API server's request logs that a global -v=3 would add.
const KlogEnv = "HARNESS_KLOG"

func init() {
	args := strings.Fields(os.Getenv(KlogEnv))
	if len(args) == 0 {
		return
	}
	fs := flag.NewFlagSet(KlogEnv, flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: %v\n", KlogEnv, os.Getenv(KlogEnv), err)
		os.Exit(2)
	}
}
