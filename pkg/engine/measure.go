package engine

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// Reading a latency role for any profile: histograms give quantiles from summed bucket rates and
// the mean from _sum/_count; µs counters give only the mean (rate of the duration over rate of
// the requests); summaries give their own quantile series per instance (they cannot be added
// across instances) and the mean from _sum/_count.

// stat is one statistic of a latency role at each point: a quantile Q, or the mean (Q = 0).
type stat struct {
	Q float64
	derive.Series
}

// groupLabels are the labels a model query groups by: model and version where the profile has them.
func (x *Exec) groupLabels() []string { return union(nil, x.modelLabel, x.versionLabel) }

// Values of the service types' `by` field: one series per model version (the default), or one
// per model version and instance, so a problem on one instance is not averaged over the others.
const (
	ByVersion  = "version"
	ByInstance = "instance"
)

// fieldServiceBy is the service types' `by`.
var fieldServiceBy = FieldSpec{Name: "by", Label: "By", Kind: KindChoice, Default: ByVersion, Allowed: []string{ByVersion, ByInstance},
	Doc: "`version`: one series per model version, the instances read together; `instance`: one per model version and instance, so a problem on one instance is not averaged over the others (the alert rules query this way)."}

// parseServiceBy reads the `by` field of the service types (latency, jitter, split, baseline,
// errors); it reports whether the series are per instance.
func parseServiceBy(f Fields) (bool, error) {
	by, err := fieldServiceBy.choice(f)
	if err != nil {
		return false, err
	}
	return by == ByInstance, nil
}

// serviceLabels are the labels a service type groups by: groupLabels, and the instance when
// perInstance.
func (x *Exec) serviceLabels(perInstance bool) []string {
	if perInstance {
		return union(x.groupLabels(), x.instanceLabel)
	}
	return x.groupLabels()
}

// groupKey identifies a series by the given labels.
func groupKey(labels map[string]string, by []string) string {
	var b strings.Builder
	for _, l := range by {
		b.WriteString(labels[l])
		b.WriteByte(0xff)
	}
	return b.String()
}

// measureNotice shows a measure's note next to the data; counters and summaries get a warning,
// since their numbers are not the percentiles a histogram gives.
func (x *Exec) measureNotice(m profile.Measure) {
	if m.Note == "" {
		return
	}
	sev := Info
	if m.Kind == profile.MicrosecondCounter || m.Kind == profile.Summary {
		sev = Warning
	}
	x.Notice(sev, m.Note)
}

// hasQuantiles reports whether the measure can give percentiles.
func hasQuantiles(m profile.Measure) bool {
	return m.Kind == profile.Histogram || (m.Kind == profile.Summary && m.QuantileLabel != "")
}

func scaleOf(m profile.Measure) float64 {
	if m.Scale == 0 {
		return 1
	}
	return m.Scale
}

// latencyReq asks for statistics qs (quantiles; 0 = the mean) of a latency measure.
type latencyReq struct {
	m  profile.Measure
	qs []float64
}

// readLatency reads one measure's statistics per group of the `by` labels (per instance too for
// summary quantiles), on the fetch grid.
func (x *Exec) readLatency(ctx context.Context, m profile.Measure, qs []float64, by []string) ([]stat, error) {
	out, err := x.readLatencies(ctx, []latencyReq{{m, qs}}, by)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// readLatencies reads several measures' statistics in one round trip. Quantiles a measure
// cannot give are left out with a notice.
func (x *Exec) readLatencies(ctx context.Context, reqs []latencyReq, by []string) ([][]stat, error) {
	// Without warming instances, Prometheus sums the buckets and takes the quantiles itself
	// (the same numbers: derive.HistogramQuantile is PromQL's algorithm) and sends far less.
	var ws *warmState
	if x.q.WarmupFilter {
		var err error
		if ws, err = x.warmup(ctx); err != nil {
			return nil, err
		}
	}
	pl := &latencyPlan{x: x, by: by, serverQuantiles: len(ws.warming()) == 0}
	out := make([][]stat, len(reqs))
	for ri, r := range reqs {
		if err := pl.plan(r, &out[ri]); err != nil {
			return nil, err
		}
	}
	if len(pl.parts) == 0 {
		return out, nil
	}
	res, err := x.read(ctx, pl.parts)
	if err != nil {
		return nil, err
	}
	for _, f := range pl.finish {
		if err := f(res); err != nil {
			return nil, err
		}
	}
	for _, o := range out {
		slices.SortStableFunc(o, func(a, b stat) int {
			if c := strings.Compare(labelsText(a.Labels), labelsText(b.Labels)); c != 0 {
				return c
			}
			return cmp.Compare(a.Q, b.Q)
		})
	}
	return out, nil
}

// latencyPlan gathers the parts of one round trip and, per part group, the step that turns
// their answer into statistics.
type latencyPlan struct {
	x  *Exec
	by []string
	// serverQuantiles: no instance is warming, so Prometheus may aggregate (see readLatencies).
	serverQuantiles bool
	parts           []part
	finish          []func(res [][]derive.Series) error
}

// add appends parts and returns where they start in the answer.
func (pl *latencyPlan) add(ps ...part) int {
	at := len(pl.parts)
	pl.parts = append(pl.parts, ps...)
	return at
}

// addRates adds one rate part per metric and returns where they start and how many there are.
func (pl *latencyPlan) addRates(metrics []string, ms []prom.Matcher, by []string) (int, int) {
	ps := rateParts(metrics, ms, by)
	return pl.add(ps...), len(ps)
}

// plan adds the parts of one measure, one planner per kind and statistic; the statistics are
// appended to dst when the answer is in.
func (pl *latencyPlan) plan(r latencyReq, dst *[]stat) error {
	m := r.m
	var quants []float64
	wantMean := false
	for _, q := range r.qs {
		if q == 0 {
			wantMean = true
		} else {
			quants = append(quants, q)
		}
	}
	x := pl.x
	if len(quants) > 0 && !hasQuantiles(m) {
		x.Notice(Warning, fmt.Sprintf("%s: percentiles do not exist for this metric (%s), only the mean", x.prof.Title, m.Kind))
		quants = nil
	}
	ms := x.measureMatchers(x.scopeOf(m), m)
	if len(quants) > 0 && m.Kind == profile.Histogram && pl.serverQuantiles && len(m.Metrics) == 1 {
		pl.serverHistogramQuantiles(m, ms, quants, dst)
	} else if len(quants) > 0 && m.Kind == profile.Histogram && len(m.Metrics) == 1 && slices.Contains(pl.by, x.instanceLabel) {
		pl.perInstanceQuantiles(m, ms, quants, dst)
	} else if len(quants) > 0 && m.Kind == profile.Histogram {
		pl.histogramQuantiles(m, ms, quants, dst)
	}
	if len(quants) > 0 && m.Kind == profile.Summary {
		if err := pl.summaryQuantiles(m, ms, quants, dst); err != nil {
			return err
		}
	}
	if wantMean && pl.serverQuantiles && len(m.Minus) == 0 &&
		(m.Kind == profile.Histogram || m.Kind == profile.Summary || m.Kind == profile.MicrosecondCounter) {
		return pl.serverMean(m, dst)
	} else if wantMean {
		return pl.rateMean(m, ms, dst)
	}
	return nil
}

// serverHistogramQuantiles has Prometheus take each quantile of the summed buckets.
func (pl *latencyPlan) serverHistogramQuantiles(m profile.Measure, ms []prom.Matcher, quants []float64, dst *[]stat) {
	scale := scaleOf(m)
	at := len(pl.parts)
	for _, q := range quants {
		pl.add(part{op: "sum", metric: m.Metrics[0] + "_bucket", matchers: ms, rate: true, by: pl.by, quantile: q})
	}
	pl.finish = append(pl.finish, func(res [][]derive.Series) error {
		for k, q := range quants {
			for _, s := range res[at+k] {
				scaleValues(s.V, scale)
				*dst = append(*dst, stat{Q: q, Series: s})
			}
		}
		return nil
	})
}

// perInstanceQuantiles: grouped per instance, each group's buckets come from one instance, and
// the warm-up mask drops all of an instance's buckets at a point or none, so masking the
// quantile Prometheus takes equals taking the quantile of the masked buckets: one series per
// quantile instead of one per bucket, whatever warms up.
func (pl *latencyPlan) perInstanceQuantiles(m profile.Measure, ms []prom.Matcher, quants []float64, dst *[]stat) {
	scale := scaleOf(m)
	at := len(pl.parts)
	for _, q := range quants {
		pl.add(part{op: "sum", metric: m.Metrics[0] + "_bucket", matchers: ms, rate: true, by: pl.by, quantile: q, perInstance: true})
	}
	pl.finish = append(pl.finish, func(res [][]derive.Series) error {
		for k, q := range quants {
			for _, s := range res[at+k] {
				scaleValues(s.V, scale)
				*dst = append(*dst, stat{Q: q, Series: s})
			}
		}
		return nil
	})
}

// histogramQuantiles reads the buckets' rates and takes the quantiles here.
func (pl *latencyPlan) histogramQuantiles(m profile.Measure, ms []prom.Matcher, quants []float64, dst *[]stat) {
	scale := scaleOf(m)
	by := union(pl.by, derive.BucketLabel)
	at, n := pl.addRates(suffixed(m.Metrics, "_bucket"), ms, by)
	pl.finish = append(pl.finish, func(res [][]derive.Series) error {
		buckets, err := sumParts(res[at:at+n], by)
		if err != nil {
			return err
		}
		hs, err := derive.Histograms(buckets)
		if err != nil {
			return err
		}
		for _, h := range hs {
			for _, q := range quants {
				s := h.Quantile(q)
				scaleValues(s.V, scale)
				*dst = append(*dst, stat{Q: q, Series: s})
			}
		}
		return nil
	})
}

// summaryQuantiles reads a summary's exported quantiles per instance (they cannot be summed),
// with a notice for each quantile asked that the summary does not export.
func (pl *latencyPlan) summaryQuantiles(m profile.Measure, ms []prom.Matcher, quants []float64, dst *[]stat) error {
	if len(m.Metrics) != 1 {
		return fmt.Errorf("a summary role needs exactly one metric, got %v", m.Metrics)
	}
	x, scale := pl.x, scaleOf(m)
	// Per GPU too where the series are (Triton's gpu_uuid): a GPU's quantiles cannot be added
	// to another's any more than an instance's, so each GPU keeps its series and the notice
	// says so; none is picked for the instance.
	dev := x.prof.DeviceLabel
	at := pl.add(part{op: "max", metric: m.Metrics[0], matchers: ms, by: union(pl.by, m.QuantileLabel, dev), perInstance: true})
	pl.finish = append(pl.finish, func(res [][]derive.Series) error {
		found := map[float64]bool{}
		perDevice := false
		for _, s := range res[at] {
			perDevice = perDevice || (dev != "" && s.Labels[dev] != "")
			q, ok := matchQuantile(s.Labels[m.QuantileLabel], quants)
			if !ok {
				continue
			}
			found[q] = true
			v := slices.Clone(s.V)
			scaleValues(v, scale)
			*dst = append(*dst, stat{Q: q, Series: derive.Series{Labels: copyWithout(s.Labels, m.QuantileLabel), T: s.T, V: v}})
		}
		if perDevice {
			x.Notice(Warning, fmt.Sprintf("%s: the %s quantiles are per GPU (%s) as well as per instance: they cannot be aggregated, so each GPU's are shown",
				x.prof.Title, strings.Join(m.Metrics, "+"), dev))
		}
		if len(res[at]) > 0 {
			for _, q := range quants {
				if !found[q] {
					x.Notice(Warning, fmt.Sprintf("%s does not export the %s quantile (its summary objectives are fixed in the server's configuration)",
						strings.Join(m.Metrics, "+"), quantileName(q)))
				}
			}
		}
		return nil
	})
	return nil
}

// serverMean has Prometheus divide the summed rates itself: half the series to send. (A
// difference, TorchServe's compute, stays in rateMean, where it is floored at zero.)
func (pl *latencyPlan) serverMean(m profile.Measure, dst *[]stat) error {
	expr, err := pl.x.latencyExpr(m, 0, pl.by, 0)
	if err != nil {
		return err
	}
	at := pl.add(part{fixed: expr, by: pl.by})
	pl.finish = append(pl.finish, func(res [][]derive.Series) error {
		for _, s := range res[at] {
			for i, v := range s.V {
				if math.IsInf(v, 0) || v < 0 {
					s.V[i] = math.NaN() // no requests is no data
				}
			}
			*dst = append(*dst, stat{Q: 0, Series: s})
		}
		return nil
	})
	return nil
}

// rateMean reads the duration, count (and subtracted) rates and divides them here.
func (pl *latencyPlan) rateMean(m profile.Measure, ms []prom.Matcher, dst *[]stat) error {
	var dur, minus, count []string
	switch m.Kind {
	case profile.Histogram, profile.Summary:
		dur, count = suffixed(m.Metrics, "_sum"), suffixed(m.Metrics, "_count")
	case profile.MicrosecondCounter:
		dur, minus, count = m.Metrics, m.Minus, m.Count
	default:
		return fmt.Errorf("a %s cannot give a latency", m.Kind)
	}
	by, scale := pl.by, scaleOf(m)
	atD, nD := pl.addRates(dur, ms, by)
	atC, nC := pl.addRates(count, ms, by)
	atM, nM := 0, 0
	if len(minus) > 0 {
		atM, nM = pl.addRates(minus, ms, by)
	}
	atX, nX := 0, 0
	if m.Kind == profile.MicrosecondCounter && len(m.CountMinus) > 0 {
		atX, nX = pl.addRates(m.CountMinus, ms, by)
	}
	pl.finish = append(pl.finish, func(res [][]derive.Series) error {
		d, err := sumParts(res[atD:atD+nD], by)
		if err != nil {
			return err
		}
		c, err := sumParts(res[atC:atC+nC], by)
		if err != nil {
			return err
		}
		var sub []derive.Series
		if nM > 0 {
			if sub, err = sumParts(res[atM:atM+nM], by); err != nil {
				return err
			}
		}
		if nX > 0 {
			x, err := sumParts(res[atX:atX+nX], by)
			if err != nil {
				return err
			}
			c = minusWherePresent(c, x, by)
		}
		means, err := meanFromRates(d, sub, c, nM > 0, scale, by)
		if err != nil {
			return err
		}
		for _, s := range means {
			*dst = append(*dst, stat{Q: 0, Series: s})
		}
		return nil
	})
	return nil
}

// meanFromRates is (Σ rate(dur) − Σ rate(minus)) / Σ rate(count) × scale per group.
func meanFromRates(dur, minus, count []derive.Series, hasMinus bool, scale float64, by []string) ([]derive.Series, error) {
	minusBy := indexBy(minus, by)
	countBy := indexBy(count, by)
	var out []derive.Series
	for _, s := range dur {
		key := groupKey(s.Labels, by)
		den, ok := countBy[key]
		if !ok {
			continue
		}
		num := s
		if hasMinus {
			sub, ok := minusBy[key]
			if !ok {
				continue
			}
			var err error
			if num, err = derive.Difference(s, sub); err != nil {
				return nil, err
			}
		}
		mean, err := derive.MeanLatency(num, den, scale)
		if err != nil {
			return nil, err
		}
		mean.Labels = s.Labels
		out = append(out, mean)
	}
	return out, nil
}

// minusWherePresent subtracts the rates of sub from those of the same group in ss, point by
// point; a missing group or point of sub counts as zero (Triton's cache hits exist only for
// models with the response cache on).
func minusWherePresent(ss, sub []derive.Series, by []string) []derive.Series {
	subBy := indexBy(sub, by)
	out := make([]derive.Series, len(ss))
	for i, s := range ss {
		x, ok := subBy[groupKey(s.Labels, by)]
		v := slices.Clone(s.V)
		if ok && len(x.V) == len(v) {
			for j := range v {
				if !math.IsNaN(x.V[j]) {
					v[j] -= x.V[j]
				}
			}
		}
		out[i] = derive.Series{Labels: s.Labels, T: s.T, V: v}
	}
	return out
}

// rateReq asks for Σ rate(metrics) of a counter measure per group of by.
type rateReq struct {
	m  profile.Measure
	by []string
}

// rates reads several counter measures' rates in one round trip.
func (x *Exec) rates(ctx context.Context, reqs ...rateReq) ([][]derive.Series, error) {
	var parts []part
	spans := make([][2]int, len(reqs))
	for i, r := range reqs {
		ps := rateParts(r.m.Metrics, x.measureMatchers(x.scopeOf(r.m), r.m), r.by)
		spans[i] = [2]int{len(parts), len(ps)}
		parts = append(parts, ps...)
	}
	res, err := x.read(ctx, parts)
	if err != nil {
		return nil, err
	}
	out := make([][]derive.Series, len(reqs))
	for i, sp := range spans {
		if out[i], err = sumParts(res[sp[0]:sp[0]+sp[1]], reqs[i].by); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rateParts reads Σ rate() of each metric as its own part: rate() over a selector matching
// several metric names drops the names, and Prometheus refuses the colliding series.
func rateParts(metrics []string, ms []prom.Matcher, by []string) []part {
	out := make([]part, len(metrics))
	for i, name := range metrics {
		out[i] = part{op: "sum", metric: name, matchers: ms, rate: true, by: by}
	}
	return out
}

// sumParts adds the parts of one role per group (the single part is returned as it is).
func sumParts(parts [][]derive.Series, by []string) ([]derive.Series, error) {
	if len(parts) == 1 {
		return parts[0], nil
	}
	var all []derive.Series
	for _, p := range parts {
		all = append(all, p...)
	}
	return derive.SumBy(all, by)
}

// scopeOf says which selection labels a measure's series carry.
func (x *Exec) scopeOf(m profile.Measure) scope {
	if m.PerInstance {
		return scopeInstance
	}
	return scopeModelVersion
}

// latencyExpr is the PromQL of a latency statistic per group, with every selector shifted by
// offset: what Prometheus computes when nothing is filtered. Summary quantiles come per instance
// with the quantile label, for the caller to pick.
func (x *Exec) latencyExpr(m profile.Measure, q float64, by []string, offset time.Duration) (string, error) {
	return x.latencyExprWith(m, q, by, offset, x.measureMatchers(x.scopeOf(m), m))
}

// latencyExprWith is latencyExpr with the selectors' matchers given.
func (x *Exec) latencyExprWith(m profile.Measure, q float64, by []string, offset time.Duration, ms []prom.Matcher) (string, error) {
	w := x.rateWindow()
	off := ""
	if offset > 0 {
		off = " offset " + promqlDuration(offset)
	}
	rate := func(metrics []string, by []string) (string, error) { return x.sumRate(metrics, ms, by, w, offset) }
	scaled := func(e string) string {
		if s := scaleOf(m); s != 1 {
			return "(" + e + ") * " + formatFloat(s)
		}
		return e
	}
	if q > 0 {
		switch {
		case m.Kind == profile.Histogram:
			buckets, err := rate(suffixed(m.Metrics, "_bucket"), union(by, derive.BucketLabel))
			if err != nil {
				return "", err
			}
			return scaled("histogram_quantile(" + formatFloat(q) + ", " + buckets + ")"), nil
		case m.Kind == profile.Summary && m.QuantileLabel != "":
			sel, err := selector(m.Metrics, ms)
			if err != nil {
				return "", err
			}
			e, err := aggregate("max", union(by, x.instanceLabel, m.QuantileLabel, x.prof.DeviceLabel), sel+off)
			if err != nil {
				return "", err
			}
			return scaled(e), nil
		}
	}
	var dur, minus, count []string
	switch m.Kind {
	case profile.Histogram, profile.Summary:
		dur, count = suffixed(m.Metrics, "_sum"), suffixed(m.Metrics, "_count")
	case profile.MicrosecondCounter:
		dur, minus, count = m.Metrics, m.Minus, m.Count
	default:
		return "", fmt.Errorf("a %s cannot give a latency", m.Kind)
	}
	num, err := rate(dur, by)
	if err != nil {
		return "", err
	}
	if len(minus) > 0 {
		sub, err := rate(minus, by)
		if err != nil {
			return "", err
		}
		num = "(" + num + " - " + sub + ")"
	}
	den, err := rate(count, by)
	if err != nil {
		return "", err
	}
	if m.Kind == profile.MicrosecondCounter && len(m.CountMinus) > 0 {
		// An absent subtrahend counts as zero: `or 0 * den` fills the groups it lacks.
		sub, err := rate(m.CountMinus, by)
		if err != nil {
			return "", err
		}
		den = "(" + den + " - (" + sub + " or 0 * " + den + "))"
	}
	return scaled(num + " / " + den), nil
}

func indexBy(ss []derive.Series, by []string) map[string]derive.Series {
	out := make(map[string]derive.Series, len(ss))
	for _, s := range ss {
		out[groupKey(s.Labels, by)] = s
	}
	return out
}

// matchQuantile finds the requested quantile a summary's quantile label stands for.
func matchQuantile(label string, quants []float64) (float64, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(label), 64)
	if err != nil {
		return 0, false
	}
	for _, q := range quants {
		if math.Abs(v-q) < 1e-9 {
			return q, true
		}
	}
	return 0, false
}

func scaleValues(v []float64, s float64) {
	if s == 1 {
		return
	}
	for i := range v {
		v[i] *= s
	}
}

// copyOn keeps the labels of l named in keep that have a value (a series grouped by keep).
func copyOn(l map[string]string, keep []string) map[string]string {
	out := make(map[string]string, len(keep))
	for _, k := range keep {
		if v := l[k]; v != "" {
			out[k] = v
		}
	}
	return out
}

func copyWithout(l map[string]string, drop ...string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		if !slices.Contains(drop, k) {
			out[k] = v
		}
	}
	return out
}

// quantileName names a quantile's series: 0.95 → "p95", 0.999 → "p99.9"; 0 is the mean.
func quantileName(q float64) string {
	if q == 0 {
		return "mean"
	}
	return "p" + strconv.FormatFloat(math.Round(q*1e6)/1e4, 'f', -1, 64)
}

// displayName joins the group's label values with the statistic's name.
func (x *Exec) displayName(labels map[string]string, what string) string {
	return joinNonEmpty(" ", labels[x.modelLabel], labels[x.versionLabel], labels[x.instanceLabel], what)
}
