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
// kubelet to go, so pod-delete leaves it alone.

// podDeleteSelector is how kwok's fast pod-delete stage picks its pods.
const podDeleteSelector = `    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
`

// DeleteOnce makes a pod-delete stage skip pods being deleted with a grace period of 0: the API
// server removes them itself.
func DeleteOnce(stage string) (string, error) {
	if !strings.Contains(stage, podDeleteSelector) {
		return "", fmt.Errorf("kwok's pod-delete stage no longer selects pods as the sandbox expects (%q): see kwokstage.DeleteOnce", podDeleteSelector)
	}
	return strings.Replace(stage, podDeleteSelector, podDeleteSelector+`    - key: '.metadata.deletionGracePeriodSeconds == 0'
      operator: 'NotIn'
      values:
      - 'true'
`, 1), nil
}
