package main

import (
	"flag"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// klogSettings is bound to klog's settings. The CLI shows only -v and --vmodule from it; the
// rest (log files, headers, thresholds) the sandbox sets in code, since where its logs go is its
// own business (--log-file), not a dozen flags its user has to read past.
var klogSettings = func() *flag.FlagSet {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	return fs
}()

// addLogFlags adds klog's -v and --vmodule to fs.
func addLogFlags(fs *pflag.FlagSet) {
	for _, name := range []string{"v", "vmodule"} {
		fs.AddFlag(pflag.PFlagFromGoFlag(klogSettings.Lookup(name)))
	}
}
