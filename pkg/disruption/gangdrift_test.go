package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// TestGangDrift: a gang's nodes are replaced together once one of them drifts, with replacements
// for every pod of the gang, and never by consolidation. The group takes the nodes of every gang
// that shares a node with it; it waits while the budget allows fewer than all of its nodes, and
// while one of its nodes is not a candidate; a fresh validation refuses it once the gang runs
// on another node too.
func TestGangDrift(t *testing.T) {
	early := testNow.Add(-time.Hour)
	gangs := func(c *cluster) {
		c.Gangs = map[string]bool{"default/train": true, "default/tune": true}
		c.node("a", "default", odXLarge, notConsolidatable(), drifted(early))
		c.pod("train-0", "a", "3", "1Gi", inGroup("train"))
		c.node("b", "default", odXLarge, notConsolidatable())
		c.pod("train-1", "b", "2", "1Gi", inGroup("train"))
		c.pod("tune-0", "b", "1", "1Gi", inGroup("tune"))
		c.node("c", "default", odXLarge, notConsolidatable())
		c.pod("tune-1", "c", "3", "1Gi", inGroup("tune"))
		c.node("d", "default", odXLarge, notConsolidatable())
		c.pod("loose", "d", "3", "1Gi")
	}
	ctx := context.Background()

	c := newCluster(t, newPool("default", consolidateNever(), budget("5")))
	gangs(c)
	cmd, _ := Decide(ctx, c.State, testPlanner(t), nil, decideOpts(15))
	wantCommand(t, cmd, karpv1.DisruptionReasonDrifted, methodGangDrift, "replace")
	if got := strings.Join(cmd.Nodes(), ","); got != "a,b,c" {
		t.Fatalf("replaces %s; want a,b,c: the nodes of train and of tune, which shares b with it", got)
	}
	held := 0
	for _, r := range cmd.Replacements {
		held += len(r.Pods)
	}
	if held != 4 {
		t.Errorf("the replacements hold %d pods; want the 4 of the two gangs", held)
	}

	// The command is still the group to replace on a fresh look; not once tune runs on d too.
	ctrl := &Controller{opts: Options{Planner: testPlanner(t), Gate: noneClosed{}}}
	if _, why := ctrl.validate(ctx, c.State, cmd); why != "" {
		t.Errorf("validation refused the command as decided: %s", why)
	}
	c.pod("tune-2", "d", "500m", "1Gi", inGroup("tune"))
	if _, why := ctrl.validate(ctx, c.State, cmd); !strings.Contains(why, "now run on") {
		t.Errorf("validation with tune on d too: %q; want it refused", why)
	}

	// A drift budget of 2 cannot take the three nodes at once.
	c = newCluster(t, newPool("default", budget("2", karpv1.DisruptionReasonDrifted)))
	gangs(c)
	if cmd, _ := Decide(ctx, c.State, testPlanner(t), nil, decideOpts(15)); cmd != nil && cmd.Method == methodGangDrift {
		t.Errorf("a drift budget of 2 took %s", describe(cmd))
	}
	// One of the group's nodes annotated do-not-disrupt: none of the group goes.
	c = newCluster(t, newPool("default", consolidateNever(), budget("5")))
	gangs(c)
	c.Nodes[2].Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	if cmd, _ := Decide(ctx, c.State, testPlanner(t), nil, decideOpts(15)); cmd != nil {
		t.Errorf("with node c annotated do-not-disrupt: %s; want nothing", describe(cmd))
	}
}

// noneClosed is a Gate with no node closed; validate asks it nothing else.
type noneClosed struct{ Gate }

func (noneClosed) Closed() []string { return nil }
