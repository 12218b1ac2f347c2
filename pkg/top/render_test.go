package top

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from what Render draws now")

func plain() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	return r
}

// The terminal view of the fixture, drawn without colours, is testdata/fleet.golden: every
// section (fleet, NodePools with limits, nodes with bars, claims on their way, pending pods with
// Tailor's reason, decisions) in place. Run `go test ./pkg/top -run Golden -update` after a
// deliberate change, and read the diff.
func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
		view View
	}{
		{name: "fleet"},
		{name: "spot-by-price", edit: func(o *Options) {
			o.Filter.Selector = mustSelector(t, "karpenter.sh/capacity-type=spot")
			o.Sort = SortPrice
		}},
		{name: "window", view: View{Offset: 1, MaxNodes: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fixtureOptions()
			if tc.edit != nil {
				tc.edit(&o)
			}
			snap, err := Build(fixture(), o)
			if err != nil {
				t.Fatal(err)
			}
			v := tc.view
			v.Renderer = plain()
			got := Render(snap, v)
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("Render differs from %s (run with -update and read the diff):\n%s", path, got)
			}
		})
	}
}

// With colours on, the bars are coloured by how full they are; the text around them is the same.
func TestRenderColoursBarsByShare(t *testing.T) {
	snap, err := Build(fixture(), fixtureOptions())
	if err != nil {
		t.Fatal(err)
	}
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI256)
	st := newStyles(r)
	low, high := st.bar(1, 10), st.bar(95, 100)
	if low == high || st.bar(1, 10) != low {
		t.Errorf("bars: %q and %q", low, high)
	}
	if coloured := Render(snap, View{Renderer: r}); coloured == Render(snap, View{Renderer: plain()}) {
		t.Error("the coloured view is the plain one")
	}
}
