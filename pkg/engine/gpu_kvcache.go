package engine

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

var fieldKVCacheMemory = FieldSpec{Name: "kvCacheMemory", Label: "KV cache as memory", Kind: KindBool, Default: false,
	Doc: "On nodes where a server reports its KV-cache usage (vLLM, SGLang), the memory series is that node's fullest KV cache: " +
		"those servers pre-allocate most of the GPU's memory, so memory used says nothing there (the memory alert rules set it)."}

// KVCacheNames are the KV-cache usage gauges of every profile, sorted: a node exporting one runs
// a server that pre-allocates its GPU memory and manages a KV cache inside it.
func KVCacheNames() []string {
	var out []string
	for _, p := range profile.All() {
		ms, _ := p.Measures(profile.KVCacheUsage)
		for _, m := range ms {
			for _, n := range m.Metrics {
				if m.Kind == profile.Gauge && !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// kvCacheMemory replaces, point by point, the memory of GPUs on nodes with a KV-cache series by
// the node's fullest KV cache (0..1).
func (x *Exec) kvCacheMemory(ctx context.Context, g gpuGrid, v *gpuValues) error {
	inst := x.instanceLabel
	sel, err := prom.Selector("", prom.In("__name__", KVCacheNames()...))
	if err != nil {
		return err
	}
	series, values, err := x.rangeOn(ctx, "max by ("+inst+") ("+sel+")", g)
	if err != nil {
		return err
	}
	byNode := map[string][]float64{}
	for i, s := range series {
		node := InstanceNode(s.Labels[inst])
		cur, ok := byNode[node]
		if !ok {
			cur = nanValues(len(g.t))
			byNode[node] = cur
		}
		for j, kv := range values[i] {
			if !math.IsNaN(kv) && (math.IsNaN(cur[j]) || kv > cur[j]) {
				cur[j] = kv
			}
		}
	}
	replaced := 0
	for _, k := range v.keys {
		kv, ok := byNode[k.Node]
		if !ok {
			continue
		}
		mem := v.values[k]
		for j := range mem {
			if !math.IsNaN(kv[j]) {
				mem[j] = kv[j]
			}
		}
		replaced++
	}
	if replaced > 0 {
		x.Notice(Info, "memory on nodes with a KV-cache server is its fullest KV cache ("+strings.Join(KVCacheNames(), ", ")+"): their GPU memory is pre-allocated")
	}
	return nil
}
