package env

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// logFleetOnFailure logs, when the test has failed, every NodeClaim with what it launched and
// the pods on its node, and the pods on no node: a failure seen once in CI, whose sandbox is gone
// by the time anyone reads it, then says what the cluster looked like.
func (e *Env) logFleetOnFailure() {
	if !e.T.Failed() || e.Cluster == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Logf("fleet at failure: listing NodeClaims: %v", err)
		return
	}
	pods, err := e.Cluster.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Logf("fleet at failure: listing pods: %v", err)
		return
	}
	byNode := map[string][]string{}
	for _, p := range pods.Items {
		name := p.Namespace + "/" + p.Name
		if p.DeletionTimestamp != nil {
			name += "(terminating)"
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fleet at failure: %d NodeClaims\n", len(claims.Items))
	for _, c := range claims.Items {
		fmt.Fprintf(&b, "  %s pool=%s type=%s zone=%s capacity=%s%s node=%s created=%s%s pods=%v\n", c.Name,
			c.Labels[karpv1.NodePoolLabelKey], c.Labels[corev1.LabelInstanceTypeStable], c.Labels[corev1.LabelTopologyZone],
			c.Labels[karpv1.CapacityTypeLabelKey], reservationOf(c.Labels), c.Status.NodeName,
			c.CreationTimestamp.Format(time.TimeOnly), deleting(c.DeletionTimestamp), podsOn(byNode, c.Status.NodeName))
	}
	fmt.Fprintf(&b, "  on no node: %v", sorted(byNode[""]))
	e.T.Log(b.String())
}

func reservationOf(labels map[string]string) string {
	if id := labels[awsv1.LabelCapacityReservationID]; id != "" {
		return "/" + id
	}
	return ""
}

func deleting(at *metav1.Time) string {
	if at == nil {
		return ""
	}
	return " deleting-since=" + at.Format(time.TimeOnly)
}

// podsOn is the pods on node, sorted; none for a claim whose node has no name yet (the pods on
// no node are listed apart).
func podsOn(byNode map[string][]string, node string) []string {
	if node == "" {
		return nil
	}
	return sorted(byNode[node])
}

func sorted(names []string) []string {
	sort.Strings(names)
	return names
}
