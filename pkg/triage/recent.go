package triage

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
)

// A recent change inside a short window. The on-call engineer asks when the page arrives, and
// several rules fire within a minute or two of the onset: the default 15-minute window then
// holds only the incident's first minutes, and its means, compared with the hour before, barely
// move. So before reading, the triage looks for the change point inside the window — the point
// from which a subject's own time (queue + compute + network) stays past the segment rule
// against its level — and compares what follows it with the hour before it, instead of the
// whole window. The detection reads the split with a short rate window (recentRate): a 5-minute
// rate still shows mostly the time before the change two minutes after it.

// recentRate is the detection's rate window: the shortest that holds two samples at a 60 s
// scrape interval (the slowest the profiles assume), so a change a minute or two old dominates
// its last points.
const recentRate = 2 * time.Minute

// recentLevelSpan is how far before the window the detection's level reaches: the level is the
// median of the subject's points over the window and as long again before it, so a change in
// the window's last minutes is measured against the minutes before it, not against the daily
// curve an hour earlier.
const recentLevelFactor = 2

// RecentChange is the change point found inside a short window: the triage compared the window
// after it with the hour before it.
type RecentChange struct {
	// At is the first point past the line (the rate window ending there holds the onset).
	At time.Time `json:"at"`
	// Where is the subject that changed (model version on instance).
	Where string `json:"where"`
	// Level is the subject's time per request before the change (the median of its points), Now
	// the mean of its points from At on; both in seconds.
	Level float64 `json:"level"`
	Now   float64 `json:"now"`
	// Asked is the window the question asked about; Covers the share of it the change covers.
	Asked  Window  `json:"asked"`
	Covers float64 `json:"covers"`
	// Points counts the points past the line: the answer to a change one point old rests on one
	// scrape interval of requests (settleRecent).
	Points int `json:"points"`
	// Signal is the series the change was seen in when it is not the time per request: "P95".
	Signal string `json:"signal,omitempty"`
	// LastInterval says the readings after the change were taken over each counter's last
	// scrape interval (irate), not over the rate window.
	LastInterval bool `json:"lastInterval,omitempty"`
}

// what names the series a change was seen in.
func (rc *RecentChange) what() string {
	if rc.Signal != "" {
		return rc.Signal
	}
	return "time per request"
}

// valueText writes a level of the series the change was seen in: a share for the KV cache, a
// time otherwise.
func (rc *RecentChange) valueText(v float64) string {
	if rc.Signal == kvSignal {
		return pctText(v)
	}
	return msText(v)
}

// recentChange finds, in one subject's series, the trailing run of points past the line against
// the subject's level: the level is the median of its points in (from − span, to] (span = the
// window's length × (recentLevelFactor − 1)), a point is past the line at line × the level
// (riseRatio: the segment rule) and the step floor above it (stepFloor of the level of base, the
// subject's time per request, or of v's own where base is nil), and the run must reach the last
// point of the window (the change is still on when asked). It returns the run's first point and
// the mean of the run; ok is false when there is no such run or it starts at or before from (the change is
// older than the window: the window's means already describe it).
func recentChange(t []int64, v, base []float64, from, to time.Time, line float64) (at time.Time, level, now float64, points int, ok bool) {
	span := to.Sub(from) * (recentLevelFactor - 1)
	lo, f, hi := from.Add(-span).UnixMilli(), from.UnixMilli(), to.UnixMilli()
	var idx []int
	var vals, bases []float64
	for i, ts := range t {
		if ts > lo && ts <= hi && i < len(v) && finite(v[i]) {
			idx = append(idx, i)
			vals = append(vals, v[i])
			if i < len(base) && finite(base[i]) {
				bases = append(bases, base[i])
			}
		}
	}
	if len(vals) < 6 {
		return time.Time{}, 0, 0, 0, false
	}
	level = median(vals)
	floor := stepFloor(level)
	if base != nil {
		floor = stepFloor(median(bases))
	}
	high := func(x float64) bool { return x >= line*level && x-level >= floor }
	start := len(vals)
	for start > 0 && high(vals[start-1]) {
		start--
	}
	// The run must be the recent minority: past half the points, the median is the incident's.
	if start == len(vals) || len(vals)-start > len(vals)/2 || t[idx[start]] <= f {
		return time.Time{}, level, 0, 0, false
	}
	return time.UnixMilli(t[idx[start]]).UTC(), level, mean(vals[start:]), len(vals) - start, true
}

// median is the middle value of xs (the upper of the two middle ones), NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sorted := slices.Clone(xs)
	sort.Float64s(sorted)
	return sorted[len(sorted)/2]
}

// recentSpan is the window compared after a change point at `at`: from one step before it (the
// rate window ending at `at` holds the onset) to the window's end, at least minWindow long.
func recentSpan(at time.Time, step time.Duration, from, to time.Time) Span {
	s := maxTime(at.Add(-step), from)
	if to.Sub(s) < minWindow {
		s = to.Add(-minWindow)
	}
	return Span{s, to}
}

// findRecent reads the split per version and instance with the short rate window and returns
// the strongest recent change of any subject (the highest ratio to its level), nil if none.
// Where no subject's time per request stepped, it looks at their P95 the same way: a change
// confined to a share of the requests (one client's long inputs, one GPU of several) lifts the
// P95 the latency rules read well before it lifts the mean.
func findRecent(ctx context.Context, e *engine.Engine, o Options) (*RecentChange, time.Duration, int, error) {
	r := newReader(e, o)
	r.rng.Start = o.From.Add(-o.To.Sub(o.From) * (recentLevelFactor - 1))
	sel := r.sel(o.Model)
	sel.RateInterval = max(recentRate, r.rng.MinStep)
	if o.Version != "" && r.verLbl != "" {
		sel.Version = []string{o.Version}
	}
	if o.Instance != "" {
		sel.Instance = []string{o.Instance}
	}
	res, err := r.run(ctx, engine.Split{Select: sel, By: engine.ByInstance})
	if err != nil {
		return nil, 0, r.rd.Queries, err
	}
	times, timeKeys := r.subjectTimes(res.Series)
	if best := strongestChange(times, timeKeys, o, ""); best != nil {
		return best, r.rng.MinStep, r.rd.Queries, nil
	}
	lat, err := r.run(ctx, engine.Latency{Select: sel, Quantiles: []float64{0.95}, By: engine.ByInstance})
	if err != nil {
		return nil, 0, r.rd.Queries, err
	}
	p95, p95Keys := r.subjectSum(lat.Series, "p95")
	if best := strongestChange(p95, p95Keys, o, "P95"); best != nil {
		return best, r.rng.MinStep, r.rd.Queries, nil
	}
	if best := segmentChange(r, res.Series, times, o); best != nil {
		return best, r.rng.MinStep, r.rd.Queries, nil
	}
	// Then a smaller step of the time per request: the decomposition's own line for a latency
	// change (totalRise), held for segmentPoints points (one point past 1.2× is within the noise
	// of a two-minute mean).
	if best := strongestChangePast(times, nil, timeKeys, o, "", totalRise, segmentPoints); best != nil {
		return best, r.rng.MinStep, r.rd.Queries, nil
	}
	kv := kvChange(ctx, r, o) // before r.rd.Queries is read: it counts its query
	return kv, r.rng.MinStep, r.rd.Queries, nil
}

// kvSignal names a change point found in the KV cache.
const kvSignal = "KV-cache usage"

// kvChange is the last place a change point is looked for: an instance's KV cache that climbed
// past its critical line from under its warning line and stayed past it to the window's end.
// A surge of long generations fills the cache within a minute, before any request has finished
// slower: the time per request has not moved yet, and the memory alert fires on the cache
// alone. What follows that point, read over each counter's last scrape interval, says what
// filled it (more requests, longer inputs); the 15 minutes' means cannot. nil where the server
// reports no KV cache or none climbed.
func kvChange(ctx context.Context, r *reader, o Options) *RecentChange {
	th := DefaultThresholds()
	step := r.rng.MinStep
	q := engine.RoleQuery{Num: profile.KVCacheUsage, Model: o.Model, Start: r.rng.EndAlignedStart(step), End: r.rng.End, Step: step}
	if o.Instance != "" {
		q.Instances = []string{o.Instance}
	}
	series, why, err := r.prom.RoleReading(ctx, q)
	if why != "" {
		return nil
	}
	r.rd.Queries++
	if err != nil {
		return nil // the detection is a refinement: without it the window is compared as one
	}
	node := o.node()
	var best *RecentChange
	for _, s := range series {
		in := s.Labels[r.instLbl]
		if in == "" || node != "" && nodeOf(in) != node {
			continue
		}
		at, level, now, n, ok := kvClimb(s.T, s.V, o.From, o.To, step, th)
		if ok && (best == nil || now-level > best.Now-best.Level) {
			best = &RecentChange{At: at, Where: in, Level: level, Now: now, Points: n, Signal: kvSignal}
		}
	}
	return best
}

// kvClimb finds in one instance's KV-cache usage (points step apart) the trailing run of points
// at or past the critical line, started inside [from, to] and reaching its last step, after a
// level (the median of the points from as long again before the window) under the warning line:
// a cache that stood full is the server's shape, not a change.
func kvClimb(t []int64, v []float64, from, to time.Time, step time.Duration, th Thresholds) (at time.Time, level, now float64, points int, ok bool) {
	span := to.Sub(from) * (recentLevelFactor - 1)
	lo, f, hi := from.Add(-span).UnixMilli(), from.UnixMilli(), to.UnixMilli()
	var ts []int64
	var vals []float64
	for i, x := range t {
		if x > lo && x <= hi && i < len(v) && finite(v[i]) {
			ts, vals = append(ts, x), append(vals, v[i])
		}
	}
	if len(vals) < 6 || ts[len(ts)-1] < hi-step.Milliseconds() {
		return time.Time{}, 0, 0, 0, false
	}
	start := len(vals)
	for start > 0 && vals[start-1] >= th.KVCacheCrit {
		start--
	}
	if start == len(vals) || start == 0 || ts[start] <= f {
		return time.Time{}, 0, 0, 0, false
	}
	level = median(vals[:start])
	if level >= th.KVCacheWarn {
		return time.Time{}, 0, 0, 0, false
	}
	return time.UnixMilli(ts[start]).UTC(), level, mean(vals[start:]), len(vals) - start, true
}

// segmentChange looks for the change in one segment of the split where neither the time per
// request nor the P95 stepped: a queue of 70 ms before seconds of compute can grow fourfold
// while the total moves by a tenth. Such a change is taken only when it has held for
// segmentPoints points: with the total flat, one point past the line is as likely the noise
// of a small mean.
func segmentChange(r *reader, series []engine.Series, times map[string]*engine.Series, o Options) *RecentChange {
	var best *RecentChange
	for _, name := range []string{"queue", "network"} {
		part, keys := r.subjectSum(series, name)
		rc := strongestChangePast(part, times, keys, o, name+" time per request", riseRatio, segmentPoints)
		if rc == nil {
			continue
		}
		if best == nil || rc.Now/rc.Level > best.Now/best.Level {
			best = rc
		}
	}
	return best
}

// segmentPoints is how many points past the line a change seen in one segment only needs.
const segmentPoints = 2

// strongestChange is the recent change of the subject whose points rose most against their
// level, nil if none; signal names the series ("" for the time per request).
func strongestChange(total map[string]*engine.Series, keys []string, o Options, signal string) *RecentChange {
	return strongestChangePast(total, nil, keys, o, signal, riseRatio, 1)
}

// strongestChangePast is strongestChange with the line at line × the level and at least
// minPoints points past it; the step floor is a share of each subject's series in base (its
// time per request, for a segment's series) or, where base is nil, of its own.
func strongestChangePast(total, base map[string]*engine.Series, keys []string, o Options, signal string, line float64, minPoints int) *RecentChange {
	var best *RecentChange
	for _, k := range keys {
		var b []float64
		if base != nil {
			b = []float64{} // a subject without a time per request gets the widest floor
			if s, ok := base[k]; ok {
				b = s.V
			}
		}
		at, level, now, n, ok := recentChange(total[k].T, total[k].V, b, o.From, o.To, line)
		if !ok || n < minPoints {
			continue
		}
		if best == nil || now/level > best.Now/best.Level {
			best = &RecentChange{At: at, Where: k, Level: level, Now: now, Points: n, Signal: signal}
		}
	}
	return best
}

// diagnoseShort triages a window up to LongWindow: where a subject's time stepped away from its
// level inside the window, the window after the change point is compared with the hour before
// it; otherwise the whole window is.
func diagnoseShort(ctx context.Context, e *engine.Engine, o Options) (*Report, error) {
	rd, rc, err := readRecent(ctx, e, o)
	if err != nil {
		return nil, err
	}
	rep := Score(rd, DefaultThresholds())
	if rc != nil {
		rep.Change = rc
		rep.Notices = append(rep.Notices, recentNotice(rc, rep.Window))
		settleRecent(&rep, rc)
	}
	return &rep, nil
}

// readRecent reads o, narrowed to what follows the change point inside the window when a
// subject's time stepped there (the change is returned, nil if none).
func readRecent(ctx context.Context, e *engine.Engine, o Options) (*Readings, *RecentChange, error) {
	rc, step, queries, err := findRecent(ctx, e, o)
	var missed string
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		// The detection is a refinement: without it the window is compared as one.
		rc, missed = nil, fmt.Sprintf("the change point inside the window was not looked for: %v", err)
	}
	ro := o
	if rc != nil {
		sp := recentSpan(rc.At, step, o.From, o.To)
		// A rate over its window at the first points after the change still holds minutes
		// before it (a surge ×1.5 read ×1.45 over five minutes, a compute ×3.7 read ×1.7 a
		// minute in); each point read over its last scrape interval holds none.
		ro.lastInterval, rc.LastInterval = true, true
		if rc.Points == 1 {
			sp.Start = rc.At.Add(-step) // the point alone: the one before it is the level's
		}
		ro.From, ro.eventsFrom = sp.Start, o.From
		rc.Asked = newWindow(o.From, o.To)
		rc.Covers = math.Round(sp.End.Sub(sp.Start).Seconds()/o.To.Sub(o.From).Seconds()*1000) / 1000
	}
	rd, err := Read(ctx, e, ro)
	if err != nil {
		return nil, nil, err
	}
	rd.Queries += queries
	if missed != "" {
		rd.Notices = append(rd.Notices, missed)
	}
	return rd, rc, nil
}

// settleRecent grades the answer by the change point found. A diagnosis of a change seen at one
// point only rests on that point's readings, every rate taken over the last scrape interval
// (readRecent), so none of the minutes before the change is in them; but they hold one interval
// of requests: the diagnosis stands at medium confidence at most, and the notice says to ask
// again to confirm. A healthy answer says that a change was found and stays under the lines,
// rather than leave the summary at odds with the notice.
func settleRecent(rep *Report, rc *RecentChange) {
	switch {
	case rc.Points == 1 && rep.Verdict == Diagnosed && rep.Confidence == "high":
		rep.Confidence = "medium"
	case rep.Verdict == Healthy:
		rep.Summary += fmt.Sprintf("; the %s of %s stepped from %s to %s at %s, and what follows stays under the lines: watch it",
			rc.what(), rc.Where, rc.valueText(rc.Level), rc.valueText(rc.Now), rc.At.Format("15:04"))
	}
}

// recentNotice says what was compared when a change point narrowed the window.
func recentNotice(rc *RecentChange, w Window) string {
	how := ""
	if rc.LastInterval {
		how = ", each rate over its last scrape interval (irate), so that no point mixes in the minutes before the change"
	}
	if rc.Points == 1 {
		return fmt.Sprintf("change point at %s: the %s of %s stepped from %s to %s at the window's last point; that point is compared with the hour before %s%s: one interval of requests, so ask again in a few minutes to confirm",
			rc.At.Format("15:04"), rc.what(), rc.Where, rc.valueText(rc.Level), rc.valueText(rc.Now), w.Start.Format("15:04"), how)
	}
	return fmt.Sprintf("change point at %s: the %s of %s stepped from %s to %s; the last %s of the %s window (%.0f %%) are compared with the hour before %s%s",
		rc.At.Format("15:04"), rc.what(), rc.Where, rc.valueText(rc.Level), rc.valueText(rc.Now), w.Duration, rc.Asked.Duration, rc.Covers*100, w.Start.Format("15:04"), how)
}
