package cloud

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// NodeClassNotReadyError says a NodePool cannot launch because its node class is not ready
// (no subnet, no AMI, user data that cannot be merged...). InstanceTypes returns it; the
// provisioner then leaves the pool out of plans, says so to the pods once, and does not retry
// until the class changes or its next look.
type NodeClassNotReadyError struct {
	// Kind and Name identify the node class, e.g. EC2NodeClass "default".
	Kind, Name string
	// Reason is the class's CamelCase reason (AMINotFound); Message names the field at fault.
	Reason, Message string
}

func (e *NodeClassNotReadyError) Error() string {
	return fmt.Sprintf("%s %q is not ready: %s: %s", e.Kind, e.Name, e.Reason, e.Message)
}

// AsNodeClassNotReady returns the NodeClassNotReadyError err is or wraps, or nil.
func AsNodeClassNotReady(err error) *NodeClassNotReadyError {
	var nr *NodeClassNotReadyError
	if errors.As(err, &nr) {
		return nr
	}
	return nil
}

// PermanentLaunchError says a launch failed for a reason that launching again cannot fix: the
// request itself is wrong (an invalid parameter, an AMI that does not exist, user data EC2
// refuses) or not allowed (the controller's role lacks a permission). Code is the cloud's error
// code. The lifecycle controller holds the claim's NodePool back (LaunchBackoff) instead of
// replacing the claim at once.
type PermanentLaunchError struct {
	Code string
	// Message is the cloud's own words, without what differs from one attempt to the next
	// (request IDs, the claim's name), so that pods are told a repeated failure once.
	Message string
	Err     error
}

func (e *PermanentLaunchError) Error() string { return e.Err.Error() }
func (e *PermanentLaunchError) Unwrap() error { return e.Err }

// AsPermanentLaunch returns the PermanentLaunchError err is or wraps, or nil.
func AsPermanentLaunch(err error) *PermanentLaunchError {
	var pe *PermanentLaunchError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// NodeClassReadiness is implemented by clouds whose NodePools reference a node class that can be
// unready. The NodePool status controller copies the answer into the pool's NodeClassReady
// condition, as Karpenter does; clouds without it have every pool's node class Ready.
type NodeClassReadiness interface {
	// NodeClassReady reports the node class's readiness: Unknown while it has not been
	// resolved, False with its reason and message when it cannot launch. An error means it could
	// not be read.
	NodeClassReady(ctx context.Context, ref *karpv1.NodeClassReference) (status metav1.ConditionStatus, reason, message string, err error)
}
