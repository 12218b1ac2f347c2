package kwokstage

import (
	"fmt"
	"strings"
)

// Deleting a pod with a grace period of 0 (the API server's reading of what kwok asks, and of
// a pod whose terminationGracePeriodSeconds is 0) is two writes: the pod is updated with its
// deletionGracePeriodSeconds at 0, then deleted. kwok sees the update as one more pod being
// deleted and plays pod-delete on it, after the pod is gone: "failed to apply stage ... not
// found", once for nearly every pod a Deployment's deletion removes. Such a pod needs no
// kubelet to go, so pod-delete leaves it alone, and FinishDeletion's stage comes back to it
// later in case the second write never happened.

// podDeleteSelector is how kwok's fast pod-delete stage picks its pods.
const podDeleteSelector = `    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
`

// gracePeriodZero selects, or with NotIn skips, pods being deleted with a grace period of 0.
const gracePeriodZero = `    - key: '.metadata.deletionGracePeriodSeconds == 0'
      operator: '%s'
      values:
      - 'true'
`

// unfinishedDeletionStage is FinishDeletion's stage's name.
const unfinishedDeletionStage = "pod-delete-unfinished"

// unfinishedDeletionDelay is how long a pod left with a grace period of 0 waits before kwok
// deletes it. The API server's own second write takes milliseconds, and the pod's deletion
// cancels the stage; only a pod still there this long after is one that write missed.
const unfinishedDeletionDelay = `  delay:
    durationMilliseconds: 2000
`

// DeleteOnce makes a pod-delete stage skip pods being deleted with a grace period of 0: the API
// server removes them itself.
func DeleteOnce(stage string) (string, error) {
	if !strings.Contains(stage, podDeleteSelector) {
		return "", fmt.Errorf("kwok's pod-delete stage no longer selects pods as the sandbox expects (%q): see kwokstage.DeleteOnce", podDeleteSelector)
	}
	return strings.Replace(stage, podDeleteSelector, podDeleteSelector+fmt.Sprintf(gracePeriodZero, "NotIn"), 1), nil
}

// FinishDeletion makes, from kwok's pod-delete stage, the stage that deletes a pod whose
// deletion stopped halfway: the API server set its grace period to 0 and then failed to remove
// it (the client went away mid-request, as a restarted Tailor does to an eviction, or etcd timed
// out). The pod then stays Terminating until someone deletes it again, which on a real node is
// the kubelet, as it is for any pod being deleted on its node. Without this stage nothing would:
// the pod would stay Terminating for ever, and a drain would wait on it until a minute past its
// grace period (see termination's stuckTerminatingAfter).
func FinishDeletion(stage string) (string, error) {
	const name, next = "  name: pod-delete\n", "  next:\n"
	if !strings.Contains(stage, podDeleteSelector) || !strings.Contains(stage, name) || !strings.Contains(stage, next) {
		return "", fmt.Errorf("kwok's pod-delete stage is no longer shaped as the sandbox expects (a name %q, a selector %q and a next step): see kwokstage.FinishDeletion", name, podDeleteSelector)
	}
	stage = strings.Replace(stage, name, "  name: "+unfinishedDeletionStage+"\n", 1)
	stage = strings.Replace(stage, podDeleteSelector, podDeleteSelector+fmt.Sprintf(gracePeriodZero, "In"), 1)
	return strings.Replace(stage, next, unfinishedDeletionDelay+next, 1), nil
}
