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
// Every query type that reads a latency role (latency, jitter, split, baseline) goes through
// readRoles, so a model gets the same measure in each.

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

// roleRead asks for statistics qs (0 = the mean) of a role read with its resolved measure m.
type roleRead struct {
	role profile.Role
	m    profile.Measure
	qs   []float64
}

// roleStats is one roleRead's answer: the statistics, and where m is a summary some groups
// lack, the fallback measure those groups were read with (their mean only) and their names.
type roleStats struct {
	stats    []stat
	fb       profile.Measure
	fellBack []string        // display names of the groups read with fb
	fbKeys   map[string]bool // their group keys (groupKey by the read's labels)
}

// readRoles reads every roleRead per group of by in one round trip, each group of a role with
// the role's measure where it has series and with the fallback mean otherwise.
func (x *Exec) readRoles(ctx context.Context, reads []roleRead, by []string) ([]roleStats, error) {
	reqs := make([]latencyReq, 0, 2*len(reads))
	fbAt := make([]int, len(reads))
	out := make([]roleStats, len(reads))
	for i, r := range reads {
		reqs = append(reqs, latencyReq{r.m, r.qs})
		fbAt[i] = -1
		if fb, ok := x.fallbackMeasure(r.role, r.m); ok {
			out[i].fb = fb
			fbAt[i] = len(reqs)
			reqs = append(reqs, latencyReq{fb, []float64{0}})
		}
	}
	read, err := x.readLatencies(ctx, reqs, by)
	if err != nil {
		return nil, err
	}
	k := 0
	for i := range reads {
		out[i].stats = read[k]
		k++
		if fbAt[i] < 0 {
			continue
		}
		out[i].stats, out[i].fellBack, out[i].fbKeys = mergeFallback(x, read[k-1], read[fbAt[i]], by)
		k++
	}
	return out, nil
}

// mergeFallback adds to primary the fallback's statistics of the groups primary lacks, and
// returns those groups' names and keys.
func mergeFallback(x *Exec, primary, fallback []stat, by []string) ([]stat, []string, map[string]bool) {
	have := map[string]bool{}
	for _, s := range primary {
		have[groupKey(s.Labels, by)] = true
	}
	out := primary
	var without []string
	keys := map[string]bool{}
	for _, s := range fallback {
		key := groupKey(s.Labels, by)
		if have[key] {
			continue
		}
		out = append(out, s)
		without = append(without, x.displayName(s.Labels, ""))
		keys[key] = true
	}
	if len(without) == 0 {
		return out, nil, nil
	}
	slices.SortStableFunc(out, func(a, b stat) int {
		if c := strings.Compare(labelsText(a.Labels), labelsText(b.Labels)); c != 0 {
			return c
		}
		return cmp.Compare(a.Q, b.Q)
	})
	return out, without, keys
}

// fallbackNotice says which groups lack the summary m and are read with the mean of rs.fb.
func (x *Exec) fallbackNotice(m profile.Measure, rs roleStats) {
	if len(rs.fellBack) == 0 {
		return
	}
	note := rs.fb.Note
	if note == "" {
		note = "the mean"
	}
	x.Notice(Warning, fmt.Sprintf("%s: %s has no %s series (%s): showing the mean of %s for it instead (%s)",
		x.prof.Title, strings.Join(rs.fellBack, ", "), strings.Join(m.Metrics, "+"), summaryOffReason, strings.Join(rs.fb.Metrics, "+"), note))
}

// summaryOffReason is why a model has no summary series where the server exports summaries.
const summaryOffReason = "Triton turns the request summary off for models with the response cache on"

// readRoleLatency reads statistics qs of the role's measure m per group of by and, where m is a
// summary some groups lack, the fallback measure's mean for those groups, with a notice naming
// them.
func (x *Exec) readRoleLatency(ctx context.Context, role profile.Role, m profile.Measure, qs []float64, by []string) ([]stat, error) {
	rs, err := x.readRoles(ctx, []roleRead{{role, m, qs}}, by)
	if err != nil {
		return nil, err
	}
	x.fallbackNotice(m, rs[0])
	return rs[0].stats, nil
}
