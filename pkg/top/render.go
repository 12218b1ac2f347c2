package top

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
)

// View is how a snapshot is drawn: the styles' renderer (its colour profile; the golden test and
// the docs use plain ASCII), and which window of the node list fits the screen.
type View struct {
	Renderer *lipgloss.Renderer
	// Offset is the first node row shown; MaxNodes how many (0: all).
	Offset, MaxNodes int
}

const barWidth = 20

// styles are built once per Render from the view's renderer; bars are cached per fill, since a
// fleet of thousands of nodes has only barWidth+1 distinct bars of each colour, and styling each
// anew would dominate the frame's time.
type styles struct {
	title, head, dim, warn lipgloss.Style
	fill                   [3]lipgloss.Style
	bars                   map[[2]int]string
}

func newStyles(r *lipgloss.Renderer) *styles {
	if r == nil {
		r = lipgloss.DefaultRenderer()
	}
	return &styles{
		title: r.NewStyle().Bold(true),
		head:  r.NewStyle().Bold(true).Underline(true),
		dim:   r.NewStyle().Faint(true),
		warn:  r.NewStyle().Foreground(lipgloss.Color("9")),
		fill:  [3]lipgloss.Style{r.NewStyle().Foreground(lipgloss.Color("10")), r.NewStyle().Foreground(lipgloss.Color("11")), r.NewStyle().Foreground(lipgloss.Color("9"))},
		bars:  map[[2]int]string{},
	}
}

// bar draws used/of as a bar of barWidth cells and a percentage: green up to 70%, yellow to 90%,
// red above, as a fleet's tightest nodes are the ones to look at.
func (s *styles) bar(used, of int64) string {
	f := share(used, of)
	cells := int(f*barWidth + 0.5)
	cells = min(max(cells, 0), barWidth)
	colour := 0
	switch {
	case f > 0.9:
		colour = 2
	case f > 0.7:
		colour = 1
	}
	key := [2]int{cells, colour}
	b, ok := s.bars[key]
	if !ok {
		b = s.fill[colour].Render(strings.Repeat("█", cells)) + s.dim.Render(strings.Repeat("░", barWidth-cells))
		s.bars[key] = b
	}
	return fmt.Sprintf("%s %3.0f%%", b, 100*f)
}

// Render draws the snapshot as text, top to bottom: the fleet, the NodePools, the nodes, the
// NodeClaims on their way, the pending pods and the latest decisions.
func Render(s *Snapshot, v View) string {
	st := newStyles(v.Renderer)
	var b strings.Builder
	header(&b, st, s)
	pools(&b, st, s)
	nodes(&b, st, s, v)
	launching(&b, st, s)
	pending(&b, st, s)
	decided(&b, st, s)
	return b.String()
}

func header(b *strings.Builder, st *styles, s *Snapshot) {
	f := s.Fleet
	fmt.Fprintf(b, "%s  %s  prices: %s", st.title.Render("tailor top"), s.Time.UTC().Format("15:04:05"), s.Prices)
	if s.Filter != "" {
		fmt.Fprintf(b, "  filter: %s", s.Filter)
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "%d nodes  %d pods  %d pending  $%.4f/h", f.Nodes, f.Pods, f.PendingPods, f.PricePerHour)
	if f.LowerBoundPerHour > 0 {
		fmt.Fprintf(b, "  lower bound $%.4f/h  %.2fx the bound", f.LowerBoundPerHour, f.PriceToBound)
	}
	if f.UnpricedNodes > 0 {
		b.WriteString(st.warn.Render(fmt.Sprintf("  %d nodes unpriced", f.UnpricedNodes)))
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "cpu    %s  %s\n", st.bar(f.Usage.CPURequestedMilli, f.Usage.CPUAllocatableMilli), cores(f.Usage.CPURequestedMilli, f.Usage.CPUAllocatableMilli))
	fmt.Fprintf(b, "memory %s  %s\n\n", st.bar(f.Usage.MemoryRequested, f.Usage.MemoryAllocatable), gibs(f.Usage.MemoryRequested, f.Usage.MemoryAllocatable))
}

func pools(b *strings.Builder, st *styles, s *Snapshot) {
	if len(s.NodePools) == 0 {
		return
	}
	w := width(len("NODEPOOL"), len(s.NodePools), func(i int) string { return s.NodePools[i].Name })
	b.WriteString(st.head.Render(fmt.Sprintf("%-*s %5s %5s %-17s %-15s %9s  %s", w, "NODEPOOL", "NODES", "PODS", "CPU", "MEMORY", "$/H", "LIMITS")))
	b.WriteString("\n")
	for _, p := range s.NodePools {
		fmt.Fprintf(b, "%-*s %5d %5d %-17s %-15s %9.4f  %s\n", w, p.Name, p.Nodes, p.Pods,
			cores(p.Usage.CPURequestedMilli, p.Usage.CPUAllocatableMilli), gibs(p.Usage.MemoryRequested, p.Usage.MemoryAllocatable),
			p.PricePerHour, limits(p))
	}
	b.WriteString("\n")
}

// limits reads "cpu 12/1000, memory 48Gi/1000Gi": what the pool's nodes count against each
// limit, over the limit.
func limits(p NodePool) string {
	if len(p.Limits) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(p.Limits))
	for k := range p.Limits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %s/%s", k, p.Capacity[k], p.Limits[k])
	}
	return strings.Join(parts, ", ")
}

func nodes(b *strings.Builder, st *styles, s *Snapshot, v View) {
	rows := s.Nodes
	if v.Offset > 0 {
		rows = rows[min(v.Offset, len(rows)):]
	}
	if v.MaxNodes > 0 && len(rows) > v.MaxNodes {
		rows = rows[:v.MaxNodes]
	}
	wName := width(len("NODE"), len(rows), func(i int) string { return rows[i].Name })
	wPool := width(len("NODEPOOL"), len(rows), func(i int) string { return rows[i].NodePool })
	wType := width(len("INSTANCE TYPE"), len(rows), func(i int) string { return rows[i].InstanceType })
	wZone := width(len("ZONE"), len(rows), func(i int) string { return rows[i].Zone })
	b.WriteString(st.head.Render(fmt.Sprintf("%-*s %-*s %-*s %-*s %-9s %4s %-*s %-*s %4s %8s  %s", wName, "NODE", wPool, "NODEPOOL", wType, "INSTANCE TYPE",
		wZone, "ZONE", "CAPACITY", "AGE", barWidth+5, "CPU", barWidth+5, "MEMORY", "PODS", "$/H", "STATE")))
	b.WriteString("\n")
	for i := range rows {
		n := &rows[i]
		price := "       -"
		if n.Priced {
			price = fmt.Sprintf("%8.4f", n.PricePerHour)
		}
		fmt.Fprintf(b, "%-*s %-*s %-*s %-*s %-9s %4s %s %s %4d %s  %s\n", wName, n.Name, wPool, dash(n.NodePool), wType, dash(n.InstanceType),
			wZone, dash(n.Zone), dash(n.CapacityType), age(s.Time, n.Created), st.bar(n.Usage.CPURequestedMilli, n.Usage.CPUAllocatableMilli),
			st.bar(n.Usage.MemoryRequested, n.Usage.MemoryAllocatable), n.Pods, price, n.State)
	}
	if shown := len(rows); shown < len(s.Nodes) {
		b.WriteString(st.dim.Render(fmt.Sprintf("nodes %d-%d of %d", v.Offset+1, v.Offset+shown, len(s.Nodes))))
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func launching(b *strings.Builder, st *styles, s *Snapshot) {
	if len(s.Launching) == 0 {
		return
	}
	b.WriteString(st.head.Render(fmt.Sprintf("NODECLAIMS ON THEIR WAY (%d)", len(s.Launching))))
	b.WriteString("\n")
	for _, c := range s.Launching {
		fmt.Fprintf(b, "%s  %s  %s %s %s  %s  %s", c.Name, dash(c.NodePool), dash(c.InstanceType), dash(c.Zone), dash(c.CapacityType), c.State, age(s.Time, c.Created))
		if c.Node != "" {
			fmt.Fprintf(b, "  node %s", c.Node)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func pending(b *strings.Builder, st *styles, s *Snapshot) {
	if len(s.Pending) == 0 {
		return
	}
	b.WriteString(st.head.Render(fmt.Sprintf("PENDING PODS (%d)", len(s.Pending))))
	b.WriteString("\n")
	for _, p := range s.Pending {
		fmt.Fprintf(b, "%s  %s", p.Pod, age(s.Time, p.Created))
		if p.Nominated != "" {
			fmt.Fprintf(b, "  nominated to %s", p.Nominated)
		}
		if p.Reason != "" {
			fmt.Fprintf(b, "  %s: %s", st.warn.Render(p.Reason), p.Message)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func decided(b *strings.Builder, st *styles, s *Snapshot) {
	if len(s.Decisions) == 0 {
		return
	}
	b.WriteString(st.head.Render("LAST DISRUPTION DECISIONS"))
	b.WriteString("\n")
	for _, d := range s.Decisions {
		fmt.Fprintf(b, "%s ago  %s  %s\n", age(s.Time, d.Time), strings.Join(d.NodeClaims, ","), d.Message)
	}
}

// width is the widest of a column's header and values, so the table lines up on any names.
func width(header, n int, value func(int) string) int {
	w := header
	for i := 0; i < n; i++ {
		w = max(w, len(value(i)))
	}
	return w
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cores(used, of int64) string {
	return fmt.Sprintf("%.1f/%.1f cores", float64(used)/1000, float64(of)/1000)
}

func gibs(used, of int64) string {
	const gib = 1 << 30
	return fmt.Sprintf("%.1f/%.1fGi", float64(used)/gib, float64(of)/gib)
}

// age is kubectl's short form: 45s, 12m, 5h, 3d.
func age(now, then time.Time) string {
	if then.IsZero() {
		return "-"
	}
	d := now.Sub(then)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
