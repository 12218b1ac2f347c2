package tailor

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Args are the plugin's knobs, set under pluginConfig in the KubeSchedulerConfiguration.
type Args struct {
	metav1.TypeMeta `json:",inline"`
	// BatchIdleDuration is how long the provisioner waits for another unschedulable pod before it
	// plans. Short, because the scheduler already serialises pods; default 30ms.
	BatchIdleDuration metav1.Duration `json:"batchIdleDuration,omitempty"`
	// BatchMaxDuration bounds the whole batch window however often pods keep arriving; default 1s.
	BatchMaxDuration metav1.Duration `json:"batchMaxDuration,omitempty"`
}

// Defaults for Args. Karpenter's are 1s and 10s; Tailor sits in the scheduler and needs no polling.
const (
	DefaultBatchIdleDuration = 30 * time.Millisecond
	DefaultBatchMaxDuration  = time.Second
)

// DecodeArgs reads the plugin's args from the scheduler configuration, fills in defaults and
// validates them, naming the offending field.
func DecodeArgs(obj runtime.Object) (*Args, error) {
	args := &Args{}
	if obj != nil {
		if err := frameworkruntime.DecodeInto(obj, args); err != nil {
			return nil, fmt.Errorf("decoding %s plugin args: %w", Name, err)
		}
	}
	SetDefaults(args)
	if errs := Validate(args, field.NewPath("pluginConfig").Key(Name).Child("args")); len(errs) > 0 {
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
	return errs
}
