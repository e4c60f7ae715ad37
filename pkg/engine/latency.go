package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
)

func init() {
	register("latency", parseLatency)
	register("jitter", parseJitter)
}

// DefaultQuantiles are the latency quantiles shown together (never trust the average).
var DefaultQuantiles = []float64{0.5, 0.95, 0.99}

const maxQuantiles = 10

// latencyQuery: the role's quantiles per model/version (and instance).
type latencyQuery struct {
	quantiles   []float64
	perInstance bool
}

func parseLatency(_ Common, f Fields) (Runner, error) {
	qs, err := f.Numbers("quantiles", DefaultQuantiles)
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		qs = DefaultQuantiles
	}
	if len(qs) > maxQuantiles {
		return nil, fieldErr("quantiles", "holds %d values, more than %d", len(qs), maxQuantiles)
	}
	var out []float64
	for i, q := range qs {
		if !(q > 0 && q <= 1) {
			return nil, fieldErr(fmt.Sprintf("quantiles[%d]", i), "must be above 0 and at most 1, got %g", q)
		}
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	perInstance, err := parseServiceBy(f)
	if err != nil {
		return nil, err
	}
	return latencyQuery{quantiles: out, perInstance: perInstance}, nil
}

func (lq latencyQuery) Run(ctx context.Context, x *Exec) error {
	m, ok, why := x.resolve(profile.Latency)
	if !ok {
		x.Notice(Warning, why)
		return nil
	}
	x.measureNotice(m)
	qs := lq.quantiles
	if !hasQuantiles(m) {
		qs = []float64{0}
	}
	stats, err := x.readLatency(ctx, m, qs, x.serviceLabels(lq.perInstance))
	if err != nil {
		return err
	}
	t, _ := x.Grid()
	for _, s := range stats {
		out := x.output(s.Series)
		name := quantileName(s.Q)
		x.Add(newSeries(name, x.displayName(s.Labels, name), UnitSeconds, s.Labels, t, out.V))
	}
	return nil
}

// jitterQuery: P99/P50 per model/version (and instance), with the threshold line.
type jitterQuery struct {
	threshold   float64
	perInstance bool
}

func parseJitter(_ Common, f Fields) (Runner, error) {
	th, err := f.Number("threshold", derive.DefaultJitterThreshold)
	if err != nil {
		return nil, err
	}
	if !(th > 1) || th > 1000 {
		return nil, fieldErr("threshold", "must be above 1 and at most 1000, got %g", th)
	}
	perInstance, err := parseServiceBy(f)
	if err != nil {
		return nil, err
	}
	return jitterQuery{threshold: th, perInstance: perInstance}, nil
}

func (jq jitterQuery) Run(ctx context.Context, x *Exec) error {
	m, ok, why := x.resolve(profile.Latency)
	if !ok {
		x.Notice(Warning, why)
		return nil
	}
	x.measureNotice(m)
	if !hasQuantiles(m) {
		x.Notice(Warning, fmt.Sprintf("%s exports no latency percentiles, so the P99/P50 jitter ratio cannot be computed", x.prof.Title))
		return nil
	}
	stats, err := x.readLatency(ctx, m, []float64{0.99, 0.5}, x.serviceLabels(jq.perInstance))
	if err != nil {
		return err
	}
	p50 := map[string]derive.Series{}
	for _, s := range stats {
		if s.Q == 0.5 {
			p50[labelsText(s.Labels)] = s.Series
		}
	}
	t, _ := x.Grid()
	for _, s := range stats {
		if s.Q != 0.99 {
			continue
		}
		den, ok := p50[labelsText(s.Labels)]
		if !ok {
			continue
		}
		ratio, err := derive.Jitter(s.Series, den)
		if err != nil {
			return err
		}
		out := newSeries("jitter", x.displayName(s.Labels, "P99/P50"), UnitNone, s.Labels, t, x.output(ratio).V)
		out.Thresholds = []Threshold{{Value: jq.threshold, Severity: Warning}}
		out.Min = ptr(0)
		x.Add(out)
	}
	return nil
}
