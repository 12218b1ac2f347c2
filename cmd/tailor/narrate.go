package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// narratedCloud tells the sandbox's story of the cloud: which instances start and stop.
type narratedCloud struct{ cloud.CloudProvider }

func (n narratedCloud) Create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	out, err := n.CloudProvider.Create(ctx, claim)
	if err == nil {
		say("cloud: instance %s running for nodeclaim %s (%s)", out.Status.ProviderID, claim.Name, out.Labels[corev1.LabelInstanceTypeStable])
	}
	return out, err
}

func (n narratedCloud) Delete(ctx context.Context, claim *karpv1.NodeClaim) error {
	err := n.CloudProvider.Delete(ctx, claim)
	if err == nil {
		say("cloud: instance %s terminated", claim.Status.ProviderID)
	}
	return err
}
