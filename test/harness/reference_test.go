package harness

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/plan"
	"github.com/tailor-sh/tailor/test/workload"
)

// TestTheOfflinePlanLaunchesWhatTheAWSCloudWould: harness seed 2518 (AWS). The price check holds
// the fleet against `tailor plan` over EC2's catalog in the emulator's region, so that catalog
// must plan as the AWS cloud's does, or the check measures the two catalogs and not the
// sandbox's batches. (Once, the simulated catalog left out the 64 MiB Graviton kernels reserve:
// its r6g.large held seven 2 GiB pods and a DaemonSet pod with 17 MiB to spare, the AWS cloud's
// did not: 1.44 x "the plan".)
func TestTheOfflinePlanLaunchesWhatTheAWSCloudWould(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := workload.Generate(2518)
	dir := t.TempDir()
	if err := s.Write(dir); err != nil {
		t.Fatal(err)
	}
	offline, err := PlanPrice(ctx, dir, AWS)
	if err != nil {
		t.Fatal(err)
	}
	onAWS, err := planOnAWS(ctx, t, s, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := launched(onAWS), launched(offline); !slices.Equal(got, want) {
		t.Fatalf("over the AWS cloud's catalog the plan launches %v ($%.4f/h); over EC2's facts as tailor plan reads them %v ($%.4f/h)",
			got, onAWS.PricePerHour, want, offline.PricePerHour)
	}
}

// planOnAWS plans the scenario's manifests in dir over the catalog the AWS provider reads from
// the emulator for the scenario's one EC2NodeClass.
func planOnAWS(ctx context.Context, t *testing.T, s *workload.Scenario, dir string) (*plan.Result, error) {
	if len(s.NodeClasses) != 1 {
		return nil, fmt.Errorf("seed %d has %d EC2NodeClasses; one catalog serves one", s.Seed, len(s.NodeClasses))
	}
	emu := emulator.Start(emulator.Options{ClusterName: "tailor"})
	t.Cleanup(emu.Close)
	provider, err := tailoraws.New(ctx, tailoraws.Options{ClusterName: "tailor", Endpoint: emu.URL(), RetryMaxBackoff: 100 * time.Millisecond,
		NodeClasses: func(context.Context, string) (*awsv1.EC2NodeClass, error) { return s.NodeClasses[0].DeepCopy(), nil }})
	if err != nil {
		return nil, err
	}
	catalog, err := provider.InstanceTypes(ctx, s.NodePools[0])
	if err != nil {
		return nil, err
	}
	return planOver(ctx, dir, catalog, "aws")
}

// launched lists a plan's NodeClaims as pool/type/capacity type, sorted. Zones are left out: the
// AWS cloud prices on-demand per region, the simulated catalog per zone.
func launched(r *plan.Result) []string {
	var out []string
	for _, c := range r.NodeClaims {
		out = append(out, c.NodePool+"/"+c.InstanceType+"/"+c.CapacityType)
	}
	slices.Sort(out)
	return out
}
