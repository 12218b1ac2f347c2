package top

import (
	"context"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// minRefresh spaces rebuilds out: a rollout changes hundreds of pods a second, and redrawing on
// each would only flicker. clockTick redraws the ages without any change from the watches; it
// reads the informers' memory, never the API server.
const (
	minRefresh = 250 * time.Millisecond
	clockTick  = 5 * time.Second
)

// Run shows the live view until the user quits or ctx ends.
func Run(ctx context.Context, src *Source, opts Options) error {
	if opts.Requests == nil {
		opts.Requests = NewRequests()
	}
	m := &model{src: src, opts: opts, renderer: lipgloss.DefaultRenderer()}
	m.rebuild()
	_, err := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx)).Run()
	if err == tea.ErrProgramKilled && ctx.Err() != nil {
		return nil
	}
	return err
}

type model struct {
	src      *Source
	opts     Options
	renderer *lipgloss.Renderer
	snap     *Snapshot
	err      error
	width    int
	height   int
	offset   int
}

type (
	changedMsg struct{}
	tickMsg    struct{}
)

func (m *model) Init() tea.Cmd { return tea.Batch(m.waitForChange(), tick()) }

// waitForChange blocks on the watches, no sooner than minRefresh after the last rebuild.
func (m *model) waitForChange() tea.Cmd {
	return func() tea.Msg {
		time.Sleep(minRefresh)
		<-m.src.Changed()
		return changedMsg{}
	}
}

func tick() tea.Cmd { return tea.Tick(clockTick, func(time.Time) tea.Msg { return tickMsg{} }) }

func (m *model) rebuild() {
	c, err := m.src.Cluster()
	if err == nil {
		o := m.opts
		o.Now = time.Now()
		m.snap, err = Build(c, o)
	}
	m.err = err
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case changedMsg:
		m.rebuild()
		return m, m.waitForChange()
	case tickMsg:
		m.rebuild()
		return m, tick()
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return m, tea.Quit
		case "s":
			m.opts.Sort = m.opts.Sort.Next()
		case "p":
			m.opts.Filter.NodePool = m.nextPool()
			m.offset = 0
		case "down", "j":
			m.offset++
		case "up", "k":
			m.offset--
		case "pgdown", " ":
			m.offset += max(m.height/2, 1)
		case "pgup":
			m.offset -= max(m.height/2, 1)
		case "home", "g":
			m.offset = 0
		}
		m.rebuild()
	}
	return m, nil
}

// nextPool cycles the NodePool filter through every pool, then none.
func (m *model) nextPool() string {
	if m.snap == nil {
		return ""
	}
	c, err := m.src.Cluster()
	if err != nil {
		return ""
	}
	names := make([]string, 0, len(c.NodePools)+1)
	for _, p := range c.NodePools {
		names = append(names, p.Name)
	}
	// Listers list in no fixed order; the cycle must be the same on every press.
	sort.Strings(names)
	names = append([]string{""}, names...)
	for i, n := range names {
		if n == m.opts.Filter.NodePool {
			return names[(i+1)%len(names)]
		}
	}
	return ""
}

func (m *model) View() string {
	if m.err != nil {
		return "tailor top: " + m.err.Error() + "\n(q to quit)"
	}
	if m.snap == nil {
		return "waiting for the cluster..."
	}
	v := View{Renderer: m.renderer, Offset: m.offset}
	if m.height > 0 {
		// Everything but the node rows, measured by drawing a single row.
		v.MaxNodes = 1
		others := strings.Count(Render(m.snap, v), "\n")
		v.MaxNodes = max(m.height-others-1, 3)
		m.offset = min(max(m.offset, 0), max(len(m.snap.Nodes)-v.MaxNodes, 0))
		v.Offset = m.offset
	}
	sortKey := m.opts.Sort
	if sortKey == "" {
		sortKey = SortNodePool
	}
	lines := strings.Split(strings.TrimSuffix(Render(m.snap, v), "\n"), "\n")
	// On a short terminal the sections below the nodes give way, so the help line stays.
	if m.height > 0 && len(lines) > m.height-1 {
		lines = lines[:max(m.height-1, 0)]
	}
	lines = append(lines, m.renderer.NewStyle().Faint(true).Render("q quit · s sort ("+string(sortKey)+") · p nodepool · ↑↓ scroll"))
	if m.width > 0 {
		for i, l := range lines {
			lines[i] = ansi.Truncate(l, m.width, "…")
		}
	}
	return strings.Join(lines, "\n")
}
