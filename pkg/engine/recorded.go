package engine

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// RecordedLatency is the latency quantile per model, version and instance that the Prometheus
// rule rendering records (pkg/alerting's RecLatency is this name): histogram_quantile of the
// summed bucket rates, left out while an instance or model warms up.
const RecordedLatency = "inferscope:latency_quantile:seconds"

// The fast path for large fleets: when Prometheus has the rendering's latency recording loaded,
// with the quantile and rate window a baseline asks for, and its series cover the previous days
// the baseline reads, those days are read from the recorded series (one per model, version and
// instance) instead of histogram_quantile over every raw bucket series. Only the per-instance
// baseline is covered: quantiles of instances do not add up to a model's.
var (
	recordedChecks   sync.Map // recordedKey → recordedEntry
	recordedQuantile = regexp.MustCompile(`histogram_quantile\(\s*([0-9.eE+-]+)\s*,`)
	recordedWindow   = regexp.MustCompile(`\[([0-9]+[smhdwy])\]`)
)

// recordedCheckTTL is how long a check's answer is reused: loading or removing a rule file takes
// effect within it.
const recordedCheckTTL = 5 * time.Minute

type recordedKey struct {
	url      string
	q        float64
	window   time.Duration
	from, to int64 // the covered span, in hours
	matchers string
}

type recordedEntry struct {
	ok  bool
	why string
	at  time.Time
}

// historyLatencyExpr is the PromQL the baseline reads the previous days with: the recorded
// series when they cover the query (a notice says so; recorded is then true and the expression
// a bare selector, whose series the caller groups by by), latencyExpr otherwise; only narrows
// the selectors to some groups.
func (x *Exec) historyLatencyExpr(ctx context.Context, m profile.Measure, q float64, by []string, offset time.Duration, opt derive.BaselineOptions, only []prom.Matcher) (expr string, recorded bool, err error) {
	if ok, sel := x.recordedCovers(ctx, m, q, by, opt); ok {
		if len(only) > 0 {
			if sel, err = x.recordedSelector(m, only...); err != nil {
				return "", false, err
			}
		}
		x.recordedNotice(q)
		if offset > 0 {
			sel += " offset " + promqlDuration(offset)
		}
		// A bare selector: Prometheus only looks its samples up, where an aggregation would
		// hash every series at every step (minutes at a fleet of hundreds of instances).
		return sel, true, nil
	}
	expr, err = x.latencyExprWith(m, q, by, offset, append(x.measureMatchers(x.scopeOf(m), m), only...))
	return expr, false, err
}

// recordedCovers says whether the recorded latency can stand for the raw buckets on the
// previous days the baseline reads, and the selector to read it with.
func (x *Exec) recordedCovers(ctx context.Context, m profile.Measure, q float64, by []string, opt derive.BaselineOptions) (bool, string) {
	from := x.g.start - int64(opt.Days)*day.Milliseconds() - opt.Window.Milliseconds()
	return x.recordedSpan(ctx, m, q, by, from, x.g.end-day.Milliseconds(), opt.Window)
}

// recordedSpan says whether the recorded latency can stand for the raw buckets over [from, to]
// (checked at from + pad and at to), and the selector to read it with.
func (x *Exec) recordedSpan(ctx context.Context, m profile.Measure, q float64, by []string, from, to int64, pad time.Duration) (bool, string) {
	// The recording is per model, version and instance: a grouping without the version (a new
	// version's model reference) would take the max of the versions' quantiles, not the
	// quantile of their summed buckets. And it is a rate over its window: it cannot stand for
	// the last interval alone.
	if m.Kind != profile.Histogram || q <= 0 || x.q.LastInterval || x.instanceLabel == "" || !slices.Contains(by, x.instanceLabel) ||
		(x.versionLabel != "" && !slices.Contains(by, x.versionLabel)) ||
		(x.e.Fleet != nil && len(x.e.Fleet.Servers) > 1) || x.e.Prom == nil {
		return false, ""
	}
	sel, err := x.recordedSelector(m)
	if err != nil {
		return false, ""
	}
	hour := time.Hour.Milliseconds()
	k := recordedKey{url: x.e.Prom.URL(), q: q, window: x.rateWindow(), from: from / hour, to: to / hour, matchers: sel}
	if v, ok := recordedChecks.Load(k); ok && x.e.Clock().Sub(v.(recordedEntry).at) < recordedCheckTTL {
		return v.(recordedEntry).ok, sel
	}
	e := recordedEntry{at: x.e.Clock()}
	e.ok, e.why = x.checkRecorded(ctx, k, sel, time.UnixMilli(from+pad.Milliseconds()), time.UnixMilli(to))
	recordedChecks.Store(k, e)
	return e.ok, sel
}

// recordedCurrent reads the current latency from the recording where it covers the range as
// well as the previous days (ok false: read it raw). The recording is the same quantile of the
// same buckets with the same rate window, evaluated at the rule's evaluation times rather than
// at the query's steps (a step reads the latest evaluation, up to one interval old where the two
// are not aligned, and without the samples scraped at the evaluation's own timestamp: where the
// latency steps, the recorded value lags the raw one by up to an evaluation), and the rule
// leaves warm-ups out by its own lifecycle signals; the warm-up filter's mask, one evaluation
// longer, is applied on top, so a point is dropped where either drops it. One series per group
// instead of the quantile of every bucket at every step.
func (x *Exec) recordedCurrent(ctx context.Context, m profile.Measure, q float64, by []string, opt derive.BaselineOptions) (roleStats, bool, error) {
	if ok, _ := x.recordedCovers(ctx, m, q, by, opt); !ok {
		return roleStats{}, false, nil
	}
	ok, sel := x.recordedSpan(ctx, m, q, by, x.fetchFrom(), x.g.end, opt.Window)
	if !ok {
		return roleStats{}, false, nil
	}
	var ws *warmState
	if x.q.WarmupFilter {
		var err error
		if ws, err = x.warmup(ctx); err != nil {
			return roleStats{}, false, err
		}
	}
	series, err := x.fetch(ctx, sel)
	if err != nil {
		return roleStats{}, false, err
	}
	var rs roleStats
	seen := map[string]bool{}
	for _, s := range series {
		labels := copyOn(s.Labels, by)
		key := labelsText(labels)
		if seen[key] { // a rule grouping by more labels than by: read the buckets instead
			return roleStats{}, false, nil
		}
		seen[key] = true
		rs.stats = append(rs.stats, stat{Q: q, Series: derive.Series{Labels: labels, T: s.T, V: s.V}})
	}
	if ws != nil {
		masked := make([]derive.Series, len(rs.stats))
		for i, st := range rs.stats {
			masked[i] = st.Series
		}
		// A recorded value lags the raw evaluation at its time by up to an evaluation (the rule
		// does not see the samples scraped at its own timestamp): the point after a warm-up
		// still holds some of it, so the mask reaches one evaluation (a minute, or the step)
		// further.
		lag := &warmState{t: ws.t, masks: make(map[string]derive.Mask, len(ws.masks))}
		for k, m := range ws.masks {
			lag.masks[k] = widenMask(m, ws.t, max(x.g.step, time.Minute).Milliseconds()+1)
		}
		if masked, err = lag.apply(masked, x.instanceLabel, x.modelLabel); err != nil {
			return roleStats{}, false, err
		}
		for i := range rs.stats {
			rs.stats[i].Series = masked[i]
		}
	}
	slices.SortFunc(rs.stats, func(a, b stat) int { return strings.Compare(labelsText(a.Labels), labelsText(b.Labels)) })
	x.Notice(Info, fmt.Sprintf("the current %s is read from the recorded %s as well (the rule's evaluations, warm-ups left out by the rule and by the warm-up filter)",
		quantileName(q), RecordedLatency))
	return rs, true, nil
}

// recordedSelector selects the recorded latency of the query's subjects, narrowed by extra.
func (x *Exec) recordedSelector(m profile.Measure, extra ...prom.Matcher) (string, error) {
	return selector([]string{RecordedLatency}, append(x.matchers(x.scopeOf(m), nil), extra...))
}

func (x *Exec) recordedNotice(q float64) {
	x.Notice(Info, fmt.Sprintf("the previous days are read from the recorded %s (the Prometheus rule file's %s over %s, warm-ups left out) instead of the raw histogram buckets",
		RecordedLatency, quantileName(q), promqlDuration(x.rateWindow())))
}

// checkRecorded asks Prometheus whether the rule is loaded with the same quantile and window,
// and whether its series exist at both ends of the span.
func (x *Exec) checkRecorded(ctx context.Context, k recordedKey, sel string, first, last time.Time) (bool, string) {
	r := x.e.Prom
	rules, err := r.RecordingRules(ctx)
	if err != nil {
		return false, "the rules could not be listed: " + err.Error()
	}
	same := false
	for _, expr := range rules[RecordedLatency] {
		qm, wm := recordedQuantile.FindStringSubmatch(expr), recordedWindow.FindStringSubmatch(expr)
		if qm == nil || wm == nil {
			continue
		}
		rq, err1 := strconv.ParseFloat(qm[1], 64)
		rw, err2 := model.ParseDuration(wm[1])
		if err1 == nil && err2 == nil && rq == k.q && time.Duration(rw) == k.window {
			same = true
		}
	}
	if !same {
		return false, "no loaded recording of this quantile and window"
	}
	for _, at := range []time.Time{first, last} {
		res, err := r.Query(ctx, fmt.Sprintf("count(last_over_time(%s[%s]))", sel, promqlDuration(2*k.window)), at, 1)
		if err != nil || len(res.Samples) == 0 || res.Samples[0].Point.V == 0 {
			return false, "the recording does not cover " + at.UTC().Format(time.RFC3339)
		}
	}
	return true, ""
}
