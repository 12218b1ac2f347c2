package aws

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/resolve"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/lifecycle/interruption"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// reservationManifests: a class that selects the reservations tagged team=ml, and a NodePool that
// takes reserved capacity first and on-demand otherwise, of one type so each pod below needs a
// node of its own. Consolidation is off so that only what is tested moves pods.
const reservationManifests = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: reserved}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-tailor
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: tailor}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: tailor}}]
  capacityReservationSelectorTerms: [{tags: {team: ml}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: reserved}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: reserved}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [reserved, on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
  disruption:
    consolidateAfter: Never
    budgets: [{nodes: "100%"}]
`

// TestCapacityReservations, on the AWS provider: pods land in a reservation first, up to its
// count, and the rest on-demand; cancelling the reservation drifts its nodes
// (CapacityReservationDrift) and they are replaced; a Capacity Block's node is interrupted
// CapacityBlockLead before the block ends, and its pod runs elsewhere.
func TestCapacityReservations(t *testing.T) {
	// The disruption loop's periods are shortened as in the other disruption tests, and the
	// reservations are described every second, so that the test need not wait Karpenter's.
	e := env.NewAWSTuned(t, env.AWSCluster, emulator.Region, sandbox.QuickDisruptionArgs(),
		func(o *tailoraws.Options) { o.CapacityReservationRefreshInterval = time.Second })
	odcr := e.Emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneA, Total: 2,
		MatchCriteria: emulator.MatchCriteriaTargeted, Tags: map[string]string{"team": "ml"}})
	file := filepath.Join(t.TempDir(), "reserved.yaml")
	if err := os.WriteFile(file, []byte(reservationManifests), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{file}, nil); err != nil {
		t.Fatal(err)
	}
	waitReservations(e, odcr)
	d := env.DeploymentOf("ml", 3, "1200m", "512Mi")
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Two pods in the reservation, the third on-demand.
	e.WaitRunning("app=ml", 3, time.Minute)
	if got, want := placement(e, "app=ml"), []string{"on-demand/", "reserved/" + odcr, "reserved/" + odcr}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pods run on %v, want %v", got, want)
	}
	if r := e.Emu.CapacityReservations()[0]; r.Available != 0 {
		t.Errorf("reservation %s has %d available with two nodes in it", odcr, r.Available)
	}

	// Cancelled: its nodes drift and are replaced by on-demand ones.
	reservedClaims := claimsIn(e, odcr)
	if err := e.Emu.CancelCapacityReservation(odcr); err != nil {
		t.Fatal(err)
	}
	waitAllDrifted(e, reservedClaims, string(tailoraws.DriftCapacityReservation))
	e.WaitFor("pods to leave the cancelled reservation", time.Minute, func() (bool, string) {
		got := placement(e, "app=ml")
		return fmt.Sprint(got) == fmt.Sprint([]string{"on-demand/", "on-demand/", "on-demand/"}) && e.ReadyPods("app=ml") == 3, fmt.Sprint(got)
	})

	// A Capacity Block: the next pod lands in it; CapacityBlockLead before its end, its node is
	// interrupted and the pod moves to on-demand capacity.
	end := e.Clock.Now().Add(resolve.CapacityBlockLead + 10*time.Minute)
	block := e.Emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneB, Total: 1,
		Type: emulator.ReservationTypeCapacityBlock, MatchCriteria: emulator.MatchCriteriaTargeted, EndTime: end, Tags: map[string]string{"team": "ml"}})
	waitReservations(e, block)
	e.Scale(d, 4)
	e.WaitRunning("app=ml", 4, time.Minute)
	if got := placement(e, "app=ml"); got[len(got)-1] != "reserved/"+block {
		t.Fatalf("pods run on %v, want one in capacity block %s", got, block)
	}
	blockClaims := claimsIn(e, block)
	e.Clock.Step(10*time.Minute + time.Second)
	e.WaitFor("the capacity block's node to go", time.Minute, func() (bool, string) {
		_, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().Get(e.Ctx, blockClaims[0], metav1.GetOptions{})
		got := placement(e, "app=ml")
		return err != nil && e.ReadyPods("app=ml") == 4 && got[len(got)-1] == "on-demand/", fmt.Sprint(got)
	})
	found := false
	reason := interruption.EventReason(cloud.InterruptionCapacityReservation)
	for _, ev := range e.EventsFor(reason, "NodeClaim") {
		found = found || ev.Regarding.Name == blockClaims[0]
	}
	if !found {
		t.Errorf("no %s Event on NodeClaim %s", reason, blockClaims[0])
	}
}

// waitReservations waits for EC2NodeClass reserved to list exactly the reservations.
func waitReservations(e *env.AWS, ids ...string) {
	e.T.Helper()
	e.WaitFor(fmt.Sprintf("EC2NodeClass reserved to list reservations %v", ids), 30*time.Second, func() (bool, string) {
		nc, err := e.Cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.Ctx, "reserved", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var got []string
		for _, cr := range nc.Status.CapacityReservations {
			if cr.State == "active" {
				got = append(got, cr.ID)
			}
		}
		ready := nc.GetCondition(awsv1.ConditionTypeReady)
		return ready != nil && ready.Status == metav1.ConditionTrue && fmt.Sprint(got) == fmt.Sprint(ids), fmt.Sprint(got)
	})
}

// placement is "capacity-type/reservation-id" of each running pod's node, sorted.
func placement(e *env.AWS, selector string) []string {
	e.T.Helper()
	pods, err := e.Cluster.Kube.CoreV1().Pods("default").List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.T.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		n, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			continue
		}
		out = append(out, n.Labels[karpv1.CapacityTypeLabelKey]+"/"+n.Labels[awsv1.LabelCapacityReservationID])
	}
	sort.Strings(out)
	return out
}

// claimsIn names the NodeClaims launched into the reservation.
func claimsIn(e *env.AWS, reservation string) []string {
	e.T.Helper()
	list, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{LabelSelector: awsv1.LabelCapacityReservationID + "=" + reservation})
	if err != nil {
		e.T.Fatal(err)
	}
	var out []string
	for _, c := range list.Items {
		out = append(out, c.Name)
	}
	if len(out) == 0 {
		e.T.Fatalf("no NodeClaim in reservation %s", reservation)
	}
	return out
}

// waitAllDrifted waits until each claim has been seen Drifted for reason. A claim must be seen
// drifted before it is replaced and gone: polls are far apart less than a replacement takes.
func waitAllDrifted(e *env.AWS, claims []string, reason string) {
	e.T.Helper()
	seen := map[string]bool{}
	e.WaitFor(fmt.Sprintf("NodeClaims %v Drifted=%s", claims, reason), time.Minute, func() (bool, string) {
		for _, name := range claims {
			if seen[name] {
				continue
			}
			c, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().Get(e.Ctx, name, metav1.GetOptions{})
			if err != nil {
				e.T.Fatalf("NodeClaim %s went before it was seen Drifted=%s: %v", name, reason, err)
			}
			if cond := c.GetCondition(karpv1.ConditionTypeDrifted); cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == reason {
				seen[name] = true
			}
		}
		return len(seen) == len(claims), fmt.Sprint(seen)
	})
}
