package aws

// HARNESS_KLOG sets klog's flags for a run that needs Tailor's detailed log, e.g.
// HARNESS_KLOG=-vmodule=provisioner=2 for the provisioner's Planned line per round
// (docs/design/planner.md measures TestKarpenterShapes's rounds so).
import _ "github.com/tailor-sh/tailor/test/harness"
