package derive

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// SumBy adds series point by point within groups of equal values of the
// labels in by, like PromQL's sum by (by...). At each timestamp the sum runs
// over the series that have a sample there; a point where no series of the
// group has one stays NaN. The result carries only the by labels that were
// non-empty, and groups come out in a stable order. All series must share one
// grid.
//
// Summing per-instance bucket rates with by = [model, version, le] is how
// quantiles are built after warm-up samples have been dropped per instance.
func SumBy(series []Series, by []string) ([]Series, error) {
	if err := sameGrid(series...); err != nil {
		return nil, err
	}
	if len(series) == 0 {
		return nil, nil
	}
	t := series[0].T
	index := map[string]int{}
	var keys []string
	var out []Series
	var sb strings.Builder
	for _, s := range series {
		sb.Reset()
		for _, name := range by {
			sb.WriteString(s.Labels[name])
			sb.WriteByte(0xff)
		}
		key := sb.String()
		g, ok := index[key]
		if !ok {
			labels := make(map[string]string, len(by))
			for _, name := range by {
				if v := s.Labels[name]; v != "" {
					labels[name] = v
				}
			}
			g = len(out)
			index[key] = g
			keys = append(keys, key)
			out = append(out, Series{Labels: labels, T: t, V: nanSlice(len(t))})
		}
		acc := out[g].V
		for i, v := range s.V {
			if math.IsNaN(v) {
				continue
			}
			if math.IsNaN(acc[i]) {
				acc[i] = v
			} else {
				acc[i] += v
			}
		}
	}
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return keys[order[a]] < keys[order[b]] })
	sorted := make([]Series, len(out))
	for i, g := range order {
		sorted[i] = out[g]
	}
	return sorted, nil
}

// Sum adds series point by point, skipping NaN; a point where every input is
// NaN stays NaN. Use it for roles made of several counters (Triton's
// compute time = input + infer + output, requests = success + failure).
func Sum(series ...Series) (Series, error) {
	if len(series) == 0 {
		return Series{}, fmt.Errorf("sum of no series")
	}
	all, err := SumBy(series, nil)
	if err != nil {
		return Series{}, err
	}
	out := all[0]
	out.Labels = copyLabels(series[0].Labels)
	return out, nil
}

// Difference returns a − b per point, floored at zero, NaN where either side
// is NaN. It gives the network segment (gateway upstream time minus the
// service's own time) and Triton's server overhead (request − queue −
// compute). The floor exists because the two sides are measured separately
// (and, for quantiles, are not additive), so small negative gaps are noise,
// not negative time.
func Difference(a, b Series) (Series, error) {
	if err := sameGrid(a, b); err != nil {
		return Series{}, err
	}
	out := Series{Labels: copyLabels(a.Labels), T: a.T, V: make([]float64, len(a.V))}
	for i := range a.V {
		d := a.V[i] - b.V[i]
		switch {
		case math.IsNaN(d) || math.IsInf(d, 0):
			out.V[i] = math.NaN()
		case d < 0:
			out.V[i] = 0
		default:
			out.V[i] = d
		}
	}
	return out, nil
}
