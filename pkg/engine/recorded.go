package engine

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
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
			if sel, err = selector([]string{RecordedLatency}, append(x.matchers(x.scopeOf(m), nil), only...)); err != nil {
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

// recordedCovers says whether the recorded latency can stand for the raw buckets here, and the
// selector to read it with.
func (x *Exec) recordedCovers(ctx context.Context, m profile.Measure, q float64, by []string, opt derive.BaselineOptions) (bool, string) {
	// The recording is per model, version and instance: a grouping without the version (a new
	// version's model reference) would take the max of the versions' quantiles, not the
	// quantile of their summed buckets.
	if m.Kind != profile.Histogram || q <= 0 || x.instanceLabel == "" || !slices.Contains(by, x.instanceLabel) ||
		(x.versionLabel != "" && !slices.Contains(by, x.versionLabel)) ||
		(x.e.Fleet != nil && len(x.e.Fleet.Servers) > 1) || x.e.Prom == nil {
		return false, ""
	}
	sel, err := selector([]string{RecordedLatency}, x.matchers(x.scopeOf(m), nil))
	if err != nil {
		return false, ""
	}
	hour := time.Hour.Milliseconds()
	from := x.g.start - int64(opt.Days)*day.Milliseconds() - opt.Window.Milliseconds()
	to := x.g.end - day.Milliseconds()
	k := recordedKey{url: x.e.Prom.URL(), q: q, window: x.rateWindow(), from: from / hour, to: to / hour, matchers: sel}
	if v, ok := recordedChecks.Load(k); ok && x.e.Clock().Sub(v.(recordedEntry).at) < recordedCheckTTL {
		return v.(recordedEntry).ok, sel
	}
	e := recordedEntry{at: x.e.Clock()}
	e.ok, e.why = x.checkRecorded(ctx, k, sel, time.UnixMilli(from+opt.Window.Milliseconds()), time.UnixMilli(to))
	recordedChecks.Store(k, e)
	return e.ok, sel
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
