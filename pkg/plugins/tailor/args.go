package tailor

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	sigsjson "sigs.k8s.io/json"
)

// Args are the plugin's knobs, set under pluginConfig in the KubeSchedulerConfiguration.
type Args struct {
	metav1.TypeMeta `json:",inline"`
	// BatchIdleDuration is how long the provisioner waits for another unschedulable pod before it
	// plans. Short, because the scheduler already serialises pods; default 30ms.
	BatchIdleDuration metav1.Duration `json:"batchIdleDuration,omitempty"`
	// BatchMaxDuration bounds the whole batch window however often pods keep arriving; default 1s.
	BatchMaxDuration metav1.Duration `json:"batchMaxDuration,omitempty"`
	// ConsolidationValidationPeriod is how long the disruption loop waits between deciding to
	// remove nodes as empty or underutilized and re-checking that decision before it acts, so
	// that pods which are only passing through do not churn the fleet; default 15s, Karpenter's.
	ConsolidationValidationPeriod metav1.Duration `json:"consolidationValidationPeriod,omitempty"`
	// DisruptionPollInterval is how often the disruption loop looks for work when nothing else
	// wakes it; default 10s, Karpenter's.
	DisruptionPollInterval metav1.Duration `json:"disruptionPollInterval,omitempty"`
	// SpotToSpotMinInstanceTypes is how many cheaper instance types a spot node must have
	// before single-node consolidation replaces it with another spot node; the replacement is
	// then offered only that many of the cheapest. Replacing spot with only the one cheapest type
	// would chase the price down into the pools most likely to be interrupted. Default 15.
	SpotToSpotMinInstanceTypes *int32 `json:"spotToSpotMinInstanceTypes,omitempty"`
	// MinValuesPolicy is what happens when the instance types that hold a NodeClaim's pods cannot
	// keep a NodePool requirement's minValues: Strict (default, as Karpenter's MIN_VALUES_POLICY)
	// leaves the pods pending; BestEffort launches with fewer values and annotates the NodeClaim
	// karpenter.sh/nodeclaim-min-values-relaxed.
	MinValuesPolicy string `json:"minValuesPolicy,omitempty"`
	// StrandedAfter is how long a pod may stay pending once the node a plan put it on is up
	// (Initialized, or the plan was made, whichever is later) before it counts as stranded: it
	// gets a Stranded Event saying what the Filter plugins answer there, and is planned again.
	// Launched nodes that no pod has landed on this long after they initialized are counted as
	// unused. Longer than the scheduler's 10 s maximum backoff; default 30s.
	StrandedAfter metav1.Duration `json:"strandedAfter,omitempty"`
	// GangCompletionTimeout is how long a gang (a PodGroup with a gang policy) may stay short of
	// its minCount, with capacity launched or held for some of its pods, before that capacity is
	// given back: the scheduler binds none of a gang's pods until minCount have a place, so a
	// half gang's nodes would be paid for and idle. Default 5m, as long as the GangScheduling
	// plugin holds a gang's pods at Permit.
	GangCompletionTimeout metav1.Duration `json:"gangCompletionTimeout,omitempty"`
	// NodeRepair replaces nodes whose Ready condition (or another condition the cloud's repair
	// policies name) has been False or Unknown longer than the policy tolerates (30 minutes for
	// Ready), forcefully, unless more than 20% of the NodePool's or the cluster's nodes are
	// unhealthy. Off by default, as Karpenter's NodeRepair feature gate.
	NodeRepair bool `json:"nodeRepair,omitempty"`
	// TerminationWorkers is how many nodes are drained and terminated at once. A drain mostly
	// waits (on evictions, on pods leaving, on the cloud), so a spot reclaim of hundreds of
	// nodes needs as many drains in hand as it has nodes to meet their two-minute deadlines;
	// a waiting drain costs a goroutine, not CPU. Default 100, as Karpenter's termination
	// controller; 1 to 1000.
	TerminationWorkers *int32 `json:"terminationWorkers,omitempty"`
	// NodeClaimWorkers is how many NodeClaims are launched, registered and finalized at once.
	// A storm launches a replacement for every interrupted node while the same queue deletes
	// their Nodes; a few workers busy with slow launches would hold the deletions back.
	// Default 100; 1 to 1000.
	NodeClaimWorkers *int32 `json:"nodeClaimWorkers,omitempty"`
}

// Defaults for Args. Karpenter's are 1s and 10s; Tailor sits in the scheduler and needs no polling.
const (
	DefaultBatchIdleDuration = 30 * time.Millisecond
	DefaultBatchMaxDuration  = time.Second

	DefaultConsolidationValidationPeriod = 15 * time.Second
	DefaultDisruptionPollInterval        = 10 * time.Second
	DefaultSpotToSpotMinInstanceTypes    = 15
	DefaultStrandedAfter                 = 30 * time.Second
	DefaultGangCompletionTimeout         = 5 * time.Minute
	DefaultTerminationWorkers            = 100
	DefaultNodeClaimWorkers              = 100
	maxWorkers                           = 1000
)

// DecodeArgs reads the plugin's args from the scheduler configuration, fills in defaults and
// validates them, naming the offending field.
func DecodeArgs(obj runtime.Object) (*Args, error) {
	args := &Args{}
	path := field.NewPath("pluginConfig").Key(Name).Child("args")
	if u, ok := obj.(*runtime.Unknown); ok && u != nil {
		// An out-of-tree plugin's args reach it as raw JSON, which the framework's DecodeInto
		// reads leniently: a misspelt knob would be dropped and its default used without a word.
		// kube-scheduler refuses unknown fields in its own plugins' args; so does Tailor.
		strictErrs, err := sigsjson.UnmarshalStrict(u.Raw, args)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(strictErrs) > 0 {
			return nil, fmt.Errorf("decoding %s: %w", path, errors.Join(strictErrs...))
		}
	} else if obj != nil {
		if err := frameworkruntime.DecodeInto(obj, args); err != nil {
			return nil, fmt.Errorf("decoding %s plugin args: %w", Name, err)
		}
	}
	SetDefaults(args)
	if errs := Validate(args, path); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return args, nil
}

// SetDefaults fills every unset field.
func SetDefaults(a *Args) {
	if a.BatchIdleDuration.Duration == 0 {
		a.BatchIdleDuration.Duration = DefaultBatchIdleDuration
	}
	if a.BatchMaxDuration.Duration == 0 {
		a.BatchMaxDuration.Duration = DefaultBatchMaxDuration
	}
	if a.ConsolidationValidationPeriod.Duration == 0 {
		a.ConsolidationValidationPeriod.Duration = DefaultConsolidationValidationPeriod
	}
	if a.DisruptionPollInterval.Duration == 0 {
		a.DisruptionPollInterval.Duration = DefaultDisruptionPollInterval
	}
	if a.MinValuesPolicy == "" {
		a.MinValuesPolicy = "Strict"
	}
	if a.StrandedAfter.Duration == 0 {
		a.StrandedAfter.Duration = DefaultStrandedAfter
	}
	if a.GangCompletionTimeout.Duration == 0 {
		a.GangCompletionTimeout.Duration = DefaultGangCompletionTimeout
	}
	if a.SpotToSpotMinInstanceTypes == nil {
		n := int32(DefaultSpotToSpotMinInstanceTypes)
		a.SpotToSpotMinInstanceTypes = &n
	}
	if a.TerminationWorkers == nil {
		n := int32(DefaultTerminationWorkers)
		a.TerminationWorkers = &n
	}
	if a.NodeClaimWorkers == nil {
		n := int32(DefaultNodeClaimWorkers)
		a.NodeClaimWorkers = &n
	}
}

// Validate checks defaulted args.
func Validate(a *Args, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.BatchIdleDuration.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("batchIdleDuration"), a.BatchIdleDuration.String(), "must not be negative"))
	}
	if a.BatchMaxDuration.Duration < a.BatchIdleDuration.Duration {
		errs = append(errs, field.Invalid(path.Child("batchMaxDuration"), a.BatchMaxDuration.String(), "must be at least batchIdleDuration"))
	}
	if a.ConsolidationValidationPeriod.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("consolidationValidationPeriod"), a.ConsolidationValidationPeriod.String(), "must not be negative"))
	}
	if a.DisruptionPollInterval.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("disruptionPollInterval"), a.DisruptionPollInterval.String(), "must not be negative"))
	}
	if a.StrandedAfter.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("strandedAfter"), a.StrandedAfter.String(), "must not be negative"))
	}
	if a.GangCompletionTimeout.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("gangCompletionTimeout"), a.GangCompletionTimeout.String(), "must not be negative"))
	}
	if a.MinValuesPolicy != "Strict" && a.MinValuesPolicy != "BestEffort" {
		errs = append(errs, field.NotSupported(path.Child("minValuesPolicy"), a.MinValuesPolicy, []string{"Strict", "BestEffort"}))
	}
	if n := a.SpotToSpotMinInstanceTypes; n != nil && (*n < 1 || *n > 60) {
		errs = append(errs, field.Invalid(path.Child("spotToSpotMinInstanceTypes"), *n, "must be between 1 and 60, the most instance types a NodeClaim offers"))
	}
	for _, w := range []struct {
		name string
		n    *int32
	}{{"terminationWorkers", a.TerminationWorkers}, {"nodeClaimWorkers", a.NodeClaimWorkers}} {
		if w.n != nil && (*w.n < 1 || *w.n > maxWorkers) {
			errs = append(errs, field.Invalid(path.Child(w.name), *w.n, fmt.Sprintf("must be between 1 and %d", maxWorkers)))
		}
	}
	return errs
}
