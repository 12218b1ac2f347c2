package e2e

import (
	"flag"
	"os"

	"k8s.io/klog/v2"
)

func init() {
	if v := os.Getenv("REPRO_VMODULE"); v != "" {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("vmodule", v)
	}
}
