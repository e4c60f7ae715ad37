package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/inferscope/inferscope/pkg/profile"
)

// The latency measure per model. A profile lists a role's measures best first, and Resolve picks
// the first whose names Prometheus has at all: one choice for the whole server. Triton's request
// summary breaks that: it is on for every model with --metrics-config summary_latencies=true
// except those with the response cache on, so a server-wide choice of the summary leaves those
// models with no latency at all.
//
// The choice is made per series instead, in the same round trip: where the chosen measure is a
// summary and a later measure of the role (the µs-counter mean) is usable too, both are read,
// and a group (model, version, and instance when asked) keeps the summary's statistics when it
// has any and takes the mean otherwise. This needs no presence look-up of its own (a label-values
// call per model, cached like the fleet catalog, would answer the same question one round trip
// earlier and go stale when a model's cache setting changes); it costs one more expression in a
// query that is sent anyway, and the answer is always that of the same instant as the data. A
// PromQL `or` of the two would do for the mean alone, but the summary's quantiles are per
// instance and GPU and the mean is not, so the merge is done here, where both shapes are known.

// fallbackMeasure is the measure a group without series of m is read with: the first usable
// measure of the role after m that is not a summary, when m is one.
func (x *Exec) fallbackMeasure(role profile.Role, m profile.Measure) (profile.Measure, bool) {
	if m.Kind != profile.Summary || x.e.Present == nil {
		return profile.Measure{}, false
	}
	ms, _ := x.prof.Measures(role)
	after := false
	for _, c := range ms {
		if !after {
			after = slices.Equal(c.Metrics, m.Metrics) && c.Kind == m.Kind
			continue
		}
		if c.Kind == profile.Summary {
			continue
		}
		usable := true
		for _, n := range c.Required() {
			usable = usable && x.e.Present[n]
		}
		if usable {
			return c, true
		}
	}
	return profile.Measure{}, false
}

// readRoleLatency reads statistics qs of the role's measure m per group of by and, where m is a
// summary some groups lack, the fallback measure's mean for those groups, with a notice naming
// them.
func (x *Exec) readRoleLatency(ctx context.Context, role profile.Role, m profile.Measure, qs []float64, by []string) ([]stat, error) {
	fb, ok := x.fallbackMeasure(role, m)
	if !ok {
		return x.readLatency(ctx, m, qs, by)
	}
	read, err := x.readLatencies(ctx, []latencyReq{{m, qs}, {fb, []float64{0}}}, by)
	if err != nil {
		return nil, err
	}
	out := read[0]
	have := map[string]bool{}
	for _, s := range out {
		have[groupKey(s.Labels, by)] = true
	}
	var without []string
	for _, s := range read[1] {
		if have[groupKey(s.Labels, by)] {
			continue
		}
		out = append(out, s)
		without = append(without, x.displayName(s.Labels, ""))
	}
	if len(without) == 0 {
		return out, nil
	}
	slices.SortStableFunc(out, func(a, b stat) int {
		if c := strings.Compare(labelsText(a.Labels), labelsText(b.Labels)); c != 0 {
			return c
		}
		return cmp.Compare(a.Q, b.Q)
	})
	note := fb.Note
	if note == "" {
		note = "the mean"
	}
	x.Notice(Warning, fmt.Sprintf("%s: %s has no %s series (Triton turns the request summary off for models with the response cache on): showing the mean of %s for it instead (%s)",
		x.prof.Title, strings.Join(without, ", "), strings.Join(m.Metrics, "+"), strings.Join(fb.Metrics, "+"), note))
	return out, nil
}
