package simulation

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// The profiles of the simulation's frameworks, each the scheduler's profile with some plugins
// left out at some extension points.

// onlyFilter returns p with only the named plugin at Filter.
func onlyFilter(p *config.KubeSchedulerProfile, name string) *config.KubeSchedulerProfile {
	out := p.DeepCopy()
	out.Plugins.Filter.Disabled = append(out.Plugins.Filter.Disabled, config.Plugin{Name: "*"})
	out.Plugins.Filter.Enabled = []config.Plugin{{Name: name}}
	return out
}

// onlyPlugin returns p with only the named plugin at PreFilter and Filter.
func onlyPlugin(p *config.KubeSchedulerProfile, name string) *config.KubeSchedulerProfile {
	out := onlyFilter(p, name)
	out.Plugins.PreFilter.Disabled = append(out.Plugins.PreFilter.Disabled, config.Plugin{Name: "*"})
	out.Plugins.PreFilter.Enabled = []config.Plugin{{Name: name}}
	return out
}

// withFilters returns p with only NodeResourcesFit at Filter (capacity true), or with every Filter
// plugin but it (capacity false).
func withFilters(p *config.KubeSchedulerProfile, capacity bool) *config.KubeSchedulerProfile {
	if capacity {
		return onlyFilter(p, names.NodeResourcesFit)
	}
	return withoutFilters(p, sets.New(names.NodeResourcesFit))
}

// withoutFilters returns p without the plugins of drop at Filter.
func withoutFilters(p *config.KubeSchedulerProfile, drop sets.Set[string]) *config.KubeSchedulerProfile {
	out := p.DeepCopy()
	out.Plugins.Filter.Enabled = withoutNames(out.Plugins.Filter.Enabled, drop)
	for _, name := range sets.List(drop) {
		out.Plugins.Filter.Disabled = append(out.Plugins.Filter.Disabled, config.Plugin{Name: name})
	}
	return out
}

func pluginSets(p *config.Plugins) []*config.PluginSet {
	return []*config.PluginSet{&p.PreEnqueue, &p.QueueSort, &p.PreFilter, &p.Filter, &p.PostFilter,
		&p.PreScore, &p.Score, &p.Reserve, &p.Permit, &p.PreBind, &p.Bind, &p.PostBind, &p.MultiPoint,
		&p.PlacementGenerate, &p.PlacementScore}
}

func withoutNames(in []config.Plugin, drop sets.Set[string]) []config.Plugin {
	out := in[:0:0]
	for _, p := range in {
		if !drop.Has(p.Name) {
			out = append(out, p)
		}
	}
	return out
}
