package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/inferscope/inferscope/pkg/prom"
)

// Load times as warm-up evidence. A server that exports how long each model's last load took
// (Triton's nv_model_load_duration_secs, per model and version) says why an instance was not
// serving at full speed after a restart, which its counters alone cannot: each warm-up interval
// of the range gets its models' load times in its reason. One query, sent only when the range
// holds warm-up.

// addLoadTimes appends the load times of each warm-up interval's models to its reason: the
// gauge's last value inside the interval (the load that interval waited for).
func (x *Exec) addLoadTimes(ctx context.Context) error {
	m := x.prof.LoadTime
	if m.Kind == 0 || len(m.Metrics) != 1 || (x.e.Present != nil && !x.e.Present[m.Metrics[0]]) {
		return nil
	}
	x.mu.Lock()
	var insts []string
	for _, w := range x.res.Warmup {
		if !slices.Contains(insts, w.Instance) {
			insts = append(insts, w.Instance)
		}
	}
	x.mu.Unlock()
	if len(insts) == 0 {
		return nil
	}
	sort.Strings(insts)
	ms := append(x.matchers(scopeModel, m.Matchers), prom.In(x.instanceLabel, insts...))
	sel, err := selector(m.Metrics, ms)
	if err != nil {
		return err
	}
	expr, err := aggregate("max", union([]string{x.instanceLabel}, x.modelLabel), sel)
	if err != nil {
		return err
	}
	series, err := x.fetch(ctx, expr)
	if err != nil {
		return fmt.Errorf("reading the load times: %w", err)
	}
	scale := scaleOf(m)
	x.mu.Lock()
	defer x.mu.Unlock()
	for i, w := range x.res.Warmup {
		var loads []string
		for _, s := range series {
			model := s.Labels[x.modelLabel]
			if s.Labels[x.instanceLabel] != w.Instance || (w.Model != "" && model != w.Model) {
				continue
			}
			v := math.NaN()
			for j, t := range s.T {
				if t >= w.Start.UnixMilli() && t <= w.End.UnixMilli() && !math.IsNaN(s.V[j]) {
					v = s.V[j]
				}
			}
			if !math.IsNaN(v) {
				loads = append(loads, fmt.Sprintf("%s %s s", joinNonEmpty(" ", model), formatFloat(math.Round(v*scale*10)/10)))
			}
		}
		if len(loads) > 0 {
			sort.Strings(loads)
			x.res.Warmup[i].Reason += fmt.Sprintf("; model load took %s (%s)", strings.Join(loads, ", "), m.Metrics[0])
		}
	}
	return nil
}
