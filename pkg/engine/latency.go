package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
)

// DefaultQuantiles are the latency quantiles shown together (never trust the average).
var DefaultQuantiles = []float64{0.5, 0.95, 0.99}

const maxQuantiles = 10

var (
	fieldQuantiles = FieldSpec{Name: "quantiles", Label: "Quantiles", Kind: KindNumbers, Default: DefaultQuantiles,
		Bounds: fmt.Sprintf("each in (0, 1], at most %d", maxQuantiles), Doc: "Latency quantiles, comma-separated in the editor."}
	latencySpec = TypeSpec{Name: "latency", Title: "Latency", Filters: modelAndInstance, parse: parseLatency,
		Doc:    "Latency quantiles (P50/P95/P99) per model and version, from the latency histogram.",
		Fields: []FieldSpec{fieldQuantiles, fieldServiceBy}}

	fieldJitterThreshold = FieldSpec{Name: "threshold", Label: "Threshold", Kind: KindNumber, Default: derive.DefaultJitterThreshold,
		Min: 1, Max: 1000, MinOpen: true, Doc: "Ratio drawn as the alert line."}
	jitterSpec = TypeSpec{Name: "jitter", Title: "Jitter", Filters: modelAndInstance, parse: parseJitter,
		Doc:    "P99 / P50 per model/version; above the threshold line the tail is detached from the median.",
		Fields: []FieldSpec{fieldJitterThreshold, fieldServiceBy}}
)

// latencyQuery: the role's quantiles per model/version (and instance).
type latencyQuery struct {
	quantiles   []float64
	perInstance bool
}

func parseLatency(_ Common, f Fields) (Runner, error) {
	qs, err := fieldQuantiles.numbers(f)
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
	stats, err := x.readRoleLatency(ctx, profile.Latency, m, qs, x.serviceLabels(lq.perInstance))
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
	th, err := fieldJitterThreshold.number(f)
	if err != nil {
		return nil, err
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
		x.Notice(Warning, fmt.Sprintf("jitter not measured: %s exports no latency percentiles (only a mean), so the P99/P50 ratio cannot be had", x.prof.Title))
		return nil
	}
	rs, err := x.readRoles(ctx, []roleRead{{profile.Latency, m, []float64{0.99, 0.5}}}, x.serviceLabels(jq.perInstance))
	if err != nil {
		return err
	}
	if len(rs[0].fellBack) > 0 {
		// Their mean is all there is: a mean has no P99 or P50.
		x.Notice(Warning, fmt.Sprintf("jitter not measured for %s: it has no %s series (%s), and its mean (%s) has no P99/P50",
			strings.Join(rs[0].fellBack, ", "), strings.Join(m.Metrics, "+"), summaryOffReason, strings.Join(rs[0].fb.Metrics, "+")))
	}
	stats := rs[0].stats
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
