package engine

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

var (
	baselineDefaults = derive.DefaultBaselineOptions()
	fieldQuantile    = FieldSpec{Name: "quantile", Label: "Quantile", Kind: KindNumber, Default: 0.95, Min: 0, Max: 1, MinOpen: true,
		Doc: "The latency quantile compared."}
	fieldDays   = FieldSpec{Name: "days", Label: "Days", Kind: KindInt, Default: baselineDefaults.Days, Min: 1, Max: 28, Doc: "Previous days averaged."}
	fieldWindow = FieldSpec{Name: "window", Label: "Window", Kind: KindDuration, Default: baselineDefaults.Window, Min: 60, Max: 6 * 3600,
		Doc: "Half-width of the same-time-of-day window."}
	fieldRatioWarn = FieldSpec{Name: "ratioWarn", Label: "Warn ratio", Kind: KindNumber, Default: baselineDefaults.P1Ratio, Bounds: "above 1",
		Doc: "A P1 candidate above this ratio …"}
	fieldFor = FieldSpec{Name: "for", Label: "For", Kind: KindDuration, Default: baselineDefaults.For, Min: 0, Max: 86400,
		Doc: "… held at every point for this long."}
	fieldRatioCrit = FieldSpec{Name: "ratioCrit", Label: "Critical ratio", Kind: KindNumber, Default: baselineDefaults.P0Ratio, Bounds: "at least ratioWarn",
		Doc: "P0 above this ratio, at once."}
	fieldMinDays = FieldSpec{Name: "minDays", Label: "Min days", Kind: KindInt, Default: baselineDefaults.MinDays, Min: 1, Max: 28, Bounds: "at most days",
		Doc: "Days with data needed to judge a point; a version with fewer is judged against its model's baseline (reference=model)."}
	baselineSpec = TypeSpec{Name: "baseline", Title: "Baseline", Filters: modelAndInstance, parse: parseBaseline,
		Doc: "Current latency quantile (the mean where the server has no percentiles) against the same time of day on previous days: mean, std, ratio, z-score, status; " +
			"labelled measure (p95 or mean) and reference (version, or model for a version with fewer than minDays days of its own).",
		Fields: []FieldSpec{fieldQuantile, fieldDays, fieldWindow, fieldRatioWarn, fieldFor, fieldRatioCrit, fieldMinDays, fieldServiceBy}}
)

const day = 24 * time.Hour

// dayLabel tells the previous days apart in the one query that reads them all.
const dayLabel = "inferscope_day"

// baselineQuery: the current latency against the same time of day on previous days.
type baselineQuery struct {
	quantile    float64
	opt         derive.BaselineOptions
	perInstance bool // per instance: each instance against its own previous days
}

func parseBaseline(_ Common, f Fields) (Runner, error) {
	var bq baselineQuery
	var err error
	if bq.quantile, err = fieldQuantile.number(f); err != nil {
		return nil, err
	}
	if bq.opt.Days, err = fieldDays.int(f, fieldDays.defaultInt(), 0); err != nil {
		return nil, err
	}
	if bq.opt.Window, err = fieldWindow.duration(f); err != nil {
		return nil, err
	}
	if bq.opt.P1Ratio, err = fieldRatioWarn.number(f); err != nil {
		return nil, err
	}
	if bq.opt.P0Ratio, err = fieldRatioCrit.number(f); err != nil {
		return nil, err
	}
	if !(bq.opt.P1Ratio > 1) || !(bq.opt.P0Ratio >= bq.opt.P1Ratio) {
		return nil, fieldErr("ratioCrit", "must be at least ratioWarn, and ratioWarn above 1 (got %g and %g)", bq.opt.P0Ratio, bq.opt.P1Ratio)
	}
	if bq.opt.For, err = fieldFor.duration(f); err != nil {
		return nil, err
	}
	if bq.opt.For == 0 {
		bq.opt.For = time.Millisecond // derive reads 0 as "default"; a zero hold is "at once"
	}
	if bq.opt.MinDays, err = fieldMinDays.int(f, min(fieldMinDays.defaultInt(), bq.opt.Days), bq.opt.Days); err != nil {
		return nil, err
	}
	if bq.perInstance, err = parseServiceBy(f); err != nil {
		return nil, err
	}
	return bq, nil
}

// StatusMappings name the baseline status series' values.
var StatusMappings = []ValueMapping{
	{Value: float64(derive.StatusOK), Text: "ok", Color: "green"},
	{Value: float64(derive.StatusP1), Text: "P1 candidate", Color: "orange"},
	{Value: float64(derive.StatusP0), Text: "P0", Color: "red"},
}

// Labels every baseline series carries, so that a panel and an alert instance (Grafana-managed
// alerting reduces each series alone and keeps its labels) say what was compared with what.
const (
	// MeasureLabel is the statistic compared: a quantile ("p95") or, on servers that export
	// only a mean latency (Triton without summaries, TorchServe, a cached Triton model), "mean".
	MeasureLabel = "measure"
	// ReferenceLabel is the history the current value is judged against: ReferenceVersion, the
	// model version's own previous days, or ReferenceModel, the model's previous days on the
	// same instances with every version together, for a version with fewer than minDays days of
	// its own (a new version after a deploy).
	ReferenceLabel   = "reference"
	ReferenceVersion = "version"
	ReferenceModel   = "model"
)

// baselineGroup is one series' baseline: its current statistic, the measure and statistic its
// history is read with, the result and the reference it was judged against.
type baselineGroup struct {
	c      stat
	m      profile.Measure
	q      float64
	res    derive.BaselineResult
	judged bool
	// modelTried: the model's reference was computed (and taken where it judges some point).
	modelTried bool
	ref        string
}

func (bq baselineQuery) Run(ctx context.Context, x *Exec) error {
	m, ok, why := x.resolve(profile.Latency)
	if !ok {
		x.Notice(Warning, why)
		return nil
	}
	x.measureNotice(m)
	q := bq.quantile
	if !hasQuantiles(m) {
		q = 0
		x.Notice(Warning, fmt.Sprintf("%s exports no latency percentiles: the baseline compares the mean latency (measure=mean), not the %s, with the mean at the same time of day on the previous days",
			x.prof.Title, quantileName(bq.quantile)))
	}
	by := x.serviceLabels(bq.perInstance)
	var (
		current roleStats
		groups  []*baselineGroup
		history map[string][]point
	)
	// Whether the recording covers the previous days, asked once before the two reads that
	// both need it run at once (cached for a while: no round trip on most runs).
	x.recordedCovers(ctx, m, q, by, bq.opt)
	if err := all(ctx,
		func(ctx context.Context) error {
			rec, ok, err := x.recordedCurrent(ctx, m, q, by, bq.opt)
			if err != nil {
				return err
			}
			if ok {
				current = rec
			} else {
				rs, err := x.readRoles(ctx, []roleRead{{profile.Latency, m, []float64{q}}}, by)
				if err != nil {
					return err
				}
				current = rs[0]
			}
			for _, c := range current.stats {
				g := &baselineGroup{c: c, m: m, q: q, ref: ReferenceVersion}
				if current.fbKeys[groupKey(c.Labels, by)] {
					g.m, g.q = current.fb, 0
				} else if c.Q != q {
					continue
				}
				groups = append(groups, g)
			}
			// The answer's size is known from the current read: refuse it now and cancel the
			// previous days' read, the costly part (minutes on a fleet of hundreds of instances).
			return bq.checkSize(x, len(groups))
		},
		func(ctx context.Context) (err error) { history, err = x.baselineHistory(ctx, m, q, by, bq.opt); return },
	); err != nil {
		return err
	}
	x.fallbackNotice(m, current)
	if err := bq.judge(ctx, x, groups, m, q, history, by); err != nil {
		return err
	}
	bq.add(x, groups)
	return nil
}

// histKey names one history read: a measure's statistic, per version or per model.
type histKey struct {
	metrics string
	q       float64
	model   bool // grouped without the version label: the model's reference
}

func keyOf(m profile.Measure, q float64, model bool) histKey {
	return histKey{strings.Join(m.Metrics, "+"), q, model}
}

// judge computes each group's baseline against the version's own previous days or, where those
// judge no point for want of days (a new version), against the model's on the same instances,
// all versions together. first is the role's measure m's history per version; the fallback
// measure's and the model's histories are read in further rounds, only when a group needs them
// (at most two: a fallback group's own history, then its model's).
func (bq baselineQuery) judge(ctx context.Context, x *Exec, groups []*baselineGroup, m profile.Measure, q float64, first map[string][]point, by []string) error {
	hist := map[histKey]map[string][]point{keyOf(m, q, false): first}
	// The model's histories are read only for the groups that need them (covered, by their
	// labels without the version): on a large fleet a new version runs on a few instances of a
	// few models, and the model's raw buckets of every instance for a week are the costliest read.
	covered := map[histKey]map[string]bool{}
	out, _ := x.Grid()
	byModel := slices.DeleteFunc(slices.Clone(by), func(l string) bool { return l == x.versionLabel })
	var newVersions []string
	for {
		var reads []historyRead
		want := func(m profile.Measure, q float64, model bool, g *baselineGroup) {
			k := keyOf(m, q, model)
			i := slices.IndexFunc(reads, func(r historyRead) bool { return r.k == k })
			if i < 0 {
				reads = append(reads, historyRead{m: m, q: q, k: k})
				i = len(reads) - 1
			}
			if model {
				reads[i].groups = append(reads[i].groups, copyWithout(g.c.Labels, x.versionLabel))
			}
		}
		for _, g := range groups {
			if !g.judged {
				own, ok := hist[keyOf(g.m, g.q, false)]
				if !ok { // a fallback group: its own measure's history first
					want(g.m, g.q, false, g)
					continue
				}
				if err := g.judge(own, g.c.Labels, out, bq.opt); err != nil {
					return err
				}
			}
			if g.modelTried || !tooFewDays(g.res) || !bq.modelReference(x, g) {
				continue
			}
			mk := keyOf(g.m, g.q, true)
			mh, ok := hist[mk]
			if !ok || !covered[mk][labelsText(copyWithout(g.c.Labels, x.versionLabel))] {
				want(g.m, g.q, true, g)
				continue
			}
			g.modelTried = true
			alt := &baselineGroup{c: g.c}
			if err := alt.judge(mh, copyWithout(g.c.Labels, x.versionLabel), out, bq.opt); err != nil {
				return err
			}
			if !tooFewDays(alt.res) {
				g.res, g.ref = alt.res, ReferenceModel
				newVersions = append(newVersions, x.displayName(g.c.Labels, ""))
			}
		}
		if len(reads) == 0 {
			break
		}
		got := make([]map[string][]point, len(reads))
		fns := make([]func(context.Context) error, len(reads))
		for i, r := range reads {
			labels, only := by, []prom.Matcher(nil)
			if r.k.model {
				labels, only = byModel, x.narrowTo(r.m, r.groups, byModel)
			}
			fns[i] = func(ctx context.Context) (err error) {
				got[i], err = x.baselineHistory(ctx, r.m, r.q, labels, bq.opt, only...)
				return
			}
		}
		if err := all(ctx, fns...); err != nil {
			return err
		}
		keepReads(hist, covered, reads, got)
	}
	if len(newVersions) > 0 {
		x.Notice(Info, fmt.Sprintf("%s: fewer than %d previous days of history of this version (a new version): judged against the model's baseline on the same instances, all versions together (%s=%s)",
			strings.Join(newVersions, ", "), bq.opt.MinDays, ReferenceLabel, ReferenceModel))
	}
	return nil
}

// keepReads adds each read's history to hist; a model's only for the groups it was read for
// (covered).
func keepReads(hist map[histKey]map[string][]point, covered map[histKey]map[string]bool, reads []historyRead, got []map[string][]point) {
	for i, r := range reads {
		if !r.k.model {
			hist[r.k] = got[i]
			continue
		}
		if hist[r.k] == nil {
			hist[r.k], covered[r.k] = map[string][]point{}, map[string]bool{}
		}
		for _, l := range r.groups {
			key := labelsText(l)
			hist[r.k][key], covered[r.k][key] = got[i][key], true
		}
	}
}

// narrowTo is the matchers that narrow a read grouped by by to the groups given (their model
// and instance values; a label some group lacks is not narrowed). The matchers select a
// superset where both are narrowed (every model on every instance named): enough, since the
// history is looked up by each group's own labels.
func (x *Exec) narrowTo(m profile.Measure, groups []map[string]string, by []string) []prom.Matcher {
	var ms []prom.Matcher
	for _, l := range []string{x.modelLabel, x.instanceLabel} {
		if l == "" || !slices.Contains(by, l) || (l == x.modelLabel && x.scopeOf(m) > scopeModel) {
			continue
		}
		var vals []string
		for _, g := range groups {
			vals = append(vals, g[l])
		}
		slices.Sort(vals)
		vals = slices.Compact(vals)
		if len(vals) == 0 || vals[0] == "" {
			continue
		}
		ms = append(ms, valuesMatcher(l, vals))
	}
	return ms
}

// historyRead is one history the baseline still needs: a measure's statistic, keyed.
type historyRead struct {
	m profile.Measure
	q float64
	k histKey
	// groups: for a model's history, the labels (without the version) of the groups needing it.
	groups []map[string]string
}

// judge computes the group's baseline from the history hist keeps under labels' key.
func (g *baselineGroup) judge(hist map[string][]point, labels map[string]string, out []int64, opt derive.BaselineOptions) error {
	key := labelsText(labels)
	res, err := derive.Baseline(mergeHistory(hist[key], g.c.Series), out, opt)
	if err != nil {
		return fmt.Errorf("baseline of %s: %w", key, err)
	}
	g.res, g.judged = res, true
	return nil
}

// tooFewDays reports whether the baseline judged none of its points for want of days while some
// had a current value.
func tooFewDays(res derive.BaselineResult) bool {
	few := false
	for _, r := range res.Reason {
		if r == derive.ReasonNone {
			return false
		}
		few = few || r == derive.ReasonFewDays
	}
	return few
}

// modelReference reports whether the group can be judged against its model's baseline: it is
// one version of a model, and its statistic can be taken over every version together (a
// summary's quantiles cannot: they are per version series and cannot be combined).
func (bq baselineQuery) modelReference(x *Exec, g *baselineGroup) bool {
	return x.versionLabel != "" && g.c.Labels[x.versionLabel] != "" && !(g.m.Kind == profile.Summary && g.q > 0)
}

// add adds each group's series, labelled with the statistic compared and the reference.
func (bq baselineQuery) add(x *Exec, groups []*baselineGroup) {
	out, _ := x.Grid()
	missing := false
	for _, g := range groups {
		res, what := g.res, quantileName(g.q)
		l := maps.Clone(g.c.Labels)
		l[MeasureLabel], l[ReferenceLabel] = what, g.ref
		days := make([]float64, len(res.Days))
		status := make([]float64, len(res.Status))
		for i := range days {
			days[i] = float64(res.Days[i])
			status[i] = float64(res.Status[i])
			if res.Days[i] < bq.opt.Days && !math.IsNaN(res.Current[i]) {
				missing = true
			}
		}
		base := what + " baseline"
		if g.ref == ReferenceModel {
			base = what + " model baseline"
		}
		ratio := newSeries("ratio", x.displayName(l, what+" / "+strings.TrimPrefix(base, what+" ")), UnitNone, l, out, res.Ratio)
		ratio.Thresholds = []Threshold{{Value: bq.opt.P1Ratio, Severity: Warning}, {Value: bq.opt.P0Ratio, Severity: Critical}}
		ratio.Min = ptr(0)
		st := newSeries("status", x.displayName(l, "status"), UnitNone, l, out, status)
		st.Mappings = StatusMappings
		st.Min, st.Max = ptr(0), ptr(2)
		x.Add(
			newSeries("current", x.displayName(l, what), UnitSeconds, l, out, res.Current),
			newSeries("baseline", x.displayName(l, base), UnitSeconds, l, out, res.Mean),
			newSeries("std", x.displayName(l, base+" std"), UnitSeconds, l, out, res.Std),
			ratio,
			newSeries("zscore", x.displayName(l, "z-score"), UnitNone, l, out, res.Z),
			newSeries("days", x.displayName(l, "days with data"), UnitNone, l, out, days),
			st,
		)
	}
	if missing {
		x.Notice(Info, fmt.Sprintf("some of the %d previous days have no data in their window: they are left out of the baseline (not counted as zero); with fewer than %d days a point is not judged (status 0)",
			bq.opt.Days, bq.opt.MinDays))
	}
}

// baselineSeries are the series add writes per group.
var baselineSeries = []string{"current", "baseline", "std", "ratio", "zscore", "days", "status"}

// checkSize refuses an answer of groups groups that would pass the series limit (the engine's
// final check, made before the history is read).
func (bq baselineQuery) checkSize(x *Exec, groups int) error {
	per := len(baselineSeries)
	if len(x.q.Series) > 0 {
		per = 0
		for _, n := range baselineSeries {
			if slices.Contains(x.q.Series, n) {
				per++
			}
		}
	}
	if n := groups * per; n > x.limits.MaxSeries {
		return seriesLimitError(n, x.limits.MaxSeries)
	}
	return nil
}

type point struct {
	t int64
	v float64
}

// historyStep is the resolution of the previous days: the baseline is the mean of the P95
// sampled every minute over each day's ±window stretch (the brief's avg_over_time(P95[20m:1m])).
const historyStep = time.Minute

// baselineHistory reads the latency statistic on the previous days, as Prometheus computes it,
// keyed by group. Short ranges read only the ±window stretches: one query whose selectors are
// shifted by 1..days days, told apart by dayLabel. Ranges of about a day or more read the whole
// stretch before the range in one query (chunked at Prometheus' point limit), so no minute of
// history is evaluated twice; so does the recorded series where the whole stretch holds at most
// a quarter more points than the windows (a bare selector read whole costs Prometheus next to
// nothing, where each window's label_replace and the `or` of the days cost it work at every step
// and series). only narrows every selector (see narrowTo).
func (x *Exec) baselineHistory(ctx context.Context, m profile.Measure, q float64, by []string, opt derive.BaselineOptions, only ...prom.Matcher) (map[string][]point, error) {
	step := historyStep.Milliseconds()
	win := opt.Window.Milliseconds()
	from := x.fetchFrom()
	dayMs := day.Milliseconds()
	expr, recorded, err := x.historyLatencyExpr(ctx, m, q, by, 0, opt, only)
	if err != nil {
		return nil, err
	}
	a, b := floorTo(x.g.start-win, step), ceilTo(x.g.end+win, step)
	wa, wb := floorTo(x.g.start-int64(opt.Days)*dayMs-win, step), floorTo(from-1, step)
	whole := b-dayMs >= from // the day windows touch each other or the current range
	if recorded && !whole {
		whole = 4*((wb-wa)/step+1) <= 5*int64(opt.Days)*((b-a)/step+1)
	}
	if whole {
		series, err := x.readHistory(ctx, expr, wa, wb, 0)
		if err != nil {
			return nil, err
		}
		return historyPoints(series, m, q, by, recorded, func(derive.Series) int64 { return 0 }), nil
	}
	var parts []string
	for d := 1; d <= opt.Days; d++ {
		e, _, err := x.historyLatencyExpr(ctx, m, q, by, time.Duration(d)*day, opt, only)
		if err != nil {
			return nil, err
		}
		parts = append(parts, withLabel(e, dayLabel, strconv.Itoa(d)))
	}
	series, err := x.readHistory(ctx, strings.Join(parts, " or "), a, b, day)
	if err != nil {
		return nil, err
	}
	return historyPoints(series, m, q, by, recorded, func(s derive.Series) int64 {
		d, err := strconv.Atoi(s.Labels[dayLabel])
		if err != nil {
			return -1
		}
		return int64(d) * dayMs
	}), nil
}

// historyPoints keys the history series' non-NaN points by group, each moved back by its shift
// (a day's offset; a series without one, -1, is left out). The recorded series are a bare
// selector's: grouped here by by, the max where several fall in one group (as `max by` would).
func historyPoints(series []derive.Series, m profile.Measure, q float64, by []string, recorded bool, shiftOf func(derive.Series) int64) map[string][]point {
	type group struct {
		shift int64
		s     derive.Series
	}
	var order []string
	groups := map[string]*group{}
	for _, s := range series {
		shift := shiftOf(s)
		if shift < 0 {
			continue
		}
		if m.Kind == profile.Summary && q > 0 {
			if _, ok := matchQuantile(s.Labels[m.QuantileLabel], []float64{q}); !ok {
				continue
			}
		}
		var labels map[string]string
		if recorded {
			labels = copyOn(s.Labels, by)
		} else {
			labels = copyWithout(s.Labels, dayLabel, m.QuantileLabel)
		}
		// One entry per group and shift (a day of the offset query).
		id := labelsText(labels) + "\xff" + strconv.FormatInt(shift, 10)
		g, ok := groups[id]
		if !ok {
			groups[id] = &group{shift, derive.Series{Labels: labels, T: s.T, V: s.V}}
			order = append(order, id)
			continue
		}
		g.s.V = slices.Clone(g.s.V) // the fetch's slice is not ours to change
		for i, v := range s.V {
			if w := g.s.V[i]; math.IsNaN(w) || v > w {
				g.s.V[i] = v
			}
		}
	}
	out := map[string][]point{}
	for _, id := range order {
		g := groups[id]
		key := labelsText(g.s.Labels)
		for i, v := range g.s.V {
			if !math.IsNaN(v) {
				out[key] = append(out[key], point{g.s.T[i] - g.shift, v})
			}
		}
	}
	return out
}

// readHistory fetches expr over [a, b] on the history grid, or only the part the history
// cache lacks. shift is how far the grid lies after the data it reads (a day for the offset
// query): it decides which samples are old enough to keep.
func (x *Exec) readHistory(ctx context.Context, expr string, a, b int64, shift time.Duration) ([]derive.Series, error) {
	step := historyStep.Milliseconds()
	grid, err := derive.Grid(a, b, step)
	if err != nil {
		return nil, err
	}
	c := x.e.History
	if c != nil {
		fa, fb, need := c.missing(expr, a, b, step)
		var fetched []derive.Series
		if need {
			part, err := derive.Grid(fa, fb, step)
			if err != nil {
				return nil, err
			}
			if fetched, err = x.fetchRange(ctx, expr, fa, fb, historyStep, part); err != nil {
				return nil, fmt.Errorf("reading the previous days: %w", err)
			}
		}
		stable := x.e.Clock().Add(shift - historyStable).UnixMilli()
		if series, ok := c.merge(expr, fetched, fa, a, b, step, stable, grid); ok {
			return series, nil
		}
	}
	series, err := x.fetchRange(ctx, expr, a, b, historyStep, grid)
	if err != nil {
		return nil, fmt.Errorf("reading the previous days: %w", err)
	}
	return series, nil
}

// mergeHistory joins the previous days' points with the current series (which wins where both
// have a timestamp) into one ascending series.
func mergeHistory(hist []point, current derive.Series) derive.Series {
	pts := slices.Clone(hist)
	for i, v := range current.V {
		pts = append(pts, point{current.T[i], v})
	}
	slices.SortStableFunc(pts, func(a, b point) int { return cmp.Compare(a.t, b.t) })
	out := derive.Series{Labels: current.Labels, T: make([]int64, 0, len(pts)), V: make([]float64, 0, len(pts))}
	for _, p := range pts {
		if n := len(out.T); n > 0 && out.T[n-1] == p.t {
			out.V[n-1] = p.v // the current series came later: it wins
			continue
		}
		out.T = append(out.T, p.t)
		out.V = append(out.V, p.v)
	}
	return out
}

func floorTo(t, step int64) int64 {
	r := t % step
	if r < 0 {
		r += step
	}
	return t - r
}

func ceilTo(t, step int64) int64 {
	f := floorTo(t, step)
	if f == t {
		return t
	}
	return f + step
}
