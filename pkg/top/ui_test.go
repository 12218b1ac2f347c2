package top

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	corelisters "k8s.io/client-go/listers/core/v1"
	eventslisters "k8s.io/client-go/listers/events/v1"
	"k8s.io/client-go/tools/cache"

	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
)

// fixtureSource is a Source over the fixture, as informers holding it would be.
func fixtureSource(t *testing.T) *Source {
	c := fixture()
	index := func(objs ...any) cache.Indexer {
		i := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for _, o := range objs {
			if err := i.Add(o); err != nil {
				t.Fatal(err)
			}
		}
		return i
	}
	var nodes, pods, events, claims, pools []any
	for _, o := range c.Nodes {
		nodes = append(nodes, o)
	}
	for _, o := range c.Pods {
		pods = append(pods, o)
	}
	for _, o := range c.Events {
		events = append(events, o)
	}
	for _, o := range c.NodeClaims {
		claims = append(claims, o)
	}
	for _, o := range c.NodePools {
		pools = append(pools, o)
	}
	return &Source{nodes: corelisters.NewNodeLister(index(nodes...)), pods: corelisters.NewPodLister(index(pods...)),
		events: eventslisters.NewEventLister(index(events...)), claims: karplisters.NewNodeClaimLister(index(claims...)),
		pools: karplisters.NewNodePoolLister(index(pools...)), changed: make(chan struct{}, 1)}
}

// The program's keys: s changes the order, p cycles the NodePool filter through every pool and
// back to none, and the view fits the terminal: no line wider, no more lines than it has.
func TestProgramKeysAndFit(t *testing.T) {
	o := fixtureOptions()
	o.Requests = NewRequests()
	m := &model{src: fixtureSource(t), opts: o, renderer: plain()}
	m.rebuild()
	if m.err != nil || len(m.snap.Nodes) != 4 {
		t.Fatalf("%v, %+v", m.err, m.snap)
	}
	key := func(k string) { m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}) }
	key("s")
	if m.opts.Sort != SortName || m.snap.Nodes[0].Name != "ip-10-0-1-10.us-west-2.compute.internal" {
		t.Errorf("after s: sort %s, first node %s", m.opts.Sort, m.snap.Nodes[0].Name)
	}
	var seen []string
	for i := 0; i < 3; i++ {
		key("p")
		seen = append(seen, m.opts.Filter.NodePool+":"+strings.Repeat("n", len(m.snap.Nodes)))
	}
	if got := strings.Join(seen, " "); got != "default:nn gpu:n :nnnn" {
		t.Errorf("p cycles %s", got)
	}
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 22})
	view := m.View()
	lines := strings.Split(view, "\n")
	if len(lines) > 22 {
		t.Errorf("%d lines on a 22-line terminal:\n%s", len(lines), view)
	}
	for _, l := range lines {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("a line %d cells wide on an 80-column terminal: %q", w, l)
		}
	}
	if !strings.Contains(view, "nodes 1-") {
		t.Errorf("the node list does not say it is a window:\n%s", view)
	}
	if _, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")}); cmd == nil {
		t.Error("q does not quit")
	}
}
