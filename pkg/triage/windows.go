package triage

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
)

// Long windows: the triage compares a window's means with the hour before, which describes a
// window of up to about an hour. Over a longer one the means dilute a 30-minute incident into
// the rest of the day, and the hour before is a day away. So a longer window is first searched
// for its change points — stretches where a subject's own time (queue + compute + network) rose
// past the segment rule against its level over the window — and each is triaged on its own:
// its first minutes against the hour before it.

// LongWindow is the longest window triaged as one; longer ones are split at their change
// points.
const LongWindow = time.Hour

// Episode limits: at most maxEpisodes change points are triaged (the strongest), each over at
// most episodeWindow from its start and at least minEpisode; change points closer than
// episodeGap are one.
const (
	maxEpisodes   = 6
	episodeWindow = 15 * time.Minute
	minEpisode    = 5 * time.Minute
	episodeGap    = 10 * time.Minute
)

// Episode is one change point of a long window and its triage.
type Episode struct {
	Window Window `json:"window"`
	// Peak is the highest ratio of the subject's time to its level over the long window.
	Peak       float64 `json:"peak"`
	Where      string  `json:"where"` // the subject that changed (model version on instance)
	Verdict    Verdict `json:"verdict"`
	Summary    string  `json:"summary"`
	Lead       string  `json:"lead,omitempty"`
	Confidence string  `json:"confidence"`
	Causes     []Cause `json:"causes"`
}

// change is a stretch of one subject's time above its level.
type change struct {
	Span
	peak  float64
	where string
}

// changePoints finds the stretches of one subject's series where its time is at least riseRatio
// times its median over [from, to] and the step floor (stepFloor of that median) above it, for
// at least two points in a row.
func changePoints(t []int64, v []float64, from, to time.Time, where string) []change {
	var in []float64
	for i, ts := range t {
		if ts > from.UnixMilli() && ts <= to.UnixMilli() && i < len(v) && finite(v[i]) {
			in = append(in, v[i])
		}
	}
	if len(in) < 4 {
		return nil
	}
	med := median(in)
	floor := stepFloor(med)
	var out []change
	var cur *change
	run := 0
	for i, ts := range t {
		if ts <= from.UnixMilli() || ts > to.UnixMilli() || i >= len(v) {
			continue
		}
		high := finite(v[i]) && v[i] >= riseRatio*med && v[i]-med >= floor
		switch {
		case high && cur == nil:
			cur, run = &change{Span: Span{time.UnixMilli(ts).UTC(), time.UnixMilli(ts).UTC()}, peak: v[i] / med, where: where}, 1
		case high:
			cur.End, run = time.UnixMilli(ts).UTC(), run+1
			cur.peak = math.Max(cur.peak, v[i]/med)
		case cur != nil:
			if run >= 2 {
				out = append(out, *cur)
			}
			cur = nil
		}
	}
	if cur != nil && run >= 2 {
		out = append(out, *cur)
	}
	return out
}

// mergeChanges joins the changes of all subjects that overlap or lie within episodeGap of each
// other and keeps the maxEpisodes strongest, in time order.
func mergeChanges(cs []change) []change {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Start.Before(cs[j].Start) })
	var out []change
	for _, c := range cs {
		if n := len(out); n > 0 && !c.Start.After(out[n-1].End.Add(episodeGap)) {
			if c.End.After(out[n-1].End) {
				out[n-1].End = c.End
			}
			if c.peak > out[n-1].peak {
				out[n-1].peak, out[n-1].where = c.peak, c.where
			}
			continue
		}
		out = append(out, c)
	}
	if len(out) > maxEpisodes {
		sort.SliceStable(out, func(i, j int) bool { return out[i].peak > out[j].peak })
		out = out[:maxEpisodes]
		sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	}
	return out
}

// episodeSpan is the window an episode is triaged over: from one step before the change was
// first seen (the rate window ending there holds its onset), at least minEpisode and at most
// episodeWindow long, inside the long window.
func episodeSpan(c change, step time.Duration, from, to time.Time) Span {
	s := maxTime(c.Start.Add(-step), from)
	e := minTime(c.End, s.Add(episodeWindow))
	if e.Sub(s) < minEpisode {
		e = minTime(s.Add(minEpisode), to)
	}
	if e.Sub(s) < minWindow {
		s = e.Add(-minWindow)
	}
	return Span{s, e}
}

// diagnoseLong triages a window longer than LongWindow at its change points.
func diagnoseLong(ctx context.Context, e *engine.Engine, o Options) (*Report, error) {
	r := newReader(e, o)
	sel := r.sel(o.Model)
	if o.Version != "" && r.verLbl != "" {
		sel.Version = []string{o.Version}
	}
	if o.Instance != "" {
		sel.Instance = []string{o.Instance}
	}
	if o.Progress != nil {
		o.Progress(1, 2, "change points of the "+dur(o.To.Sub(o.From))+" window")
	}
	res, err := r.run(ctx, engine.Split{Select: sel, By: engine.ByInstance})
	if err != nil {
		return nil, err
	}
	total, keys := r.subjectTimes(res.Series)
	var cs []change
	for _, k := range keys {
		cs = append(cs, changePoints(total[k].T, total[k].V, o.From, o.To, k)...)
	}
	cs = mergeChanges(cs)
	queries := r.rd.Queries + r.prom.Queries()
	if len(cs) == 0 {
		rd, err := Read(ctx, e, o)
		if err != nil {
			return nil, err
		}
		rep := Score(rd, DefaultThresholds())
		rep.Queries += queries
		rep.Notices = append(rep.Notices, fmt.Sprintf("no change point in the %s window (no subject's time rose to %.1f× its level over the window): its means are compared with the hour before it", dur(o.To.Sub(o.From)), riseRatio))
		return &rep, nil
	}
	var eps []Episode
	var reports []Report
	for i, c := range cs {
		sp := episodeSpan(c, r.rng.MinStep, o.From, o.To)
		if o.Progress != nil {
			o.Progress(2, 2, fmt.Sprintf("change point %d of %d: %s at %s", i+1, len(cs), c.where, sp.Start.Format(time.RFC3339)))
		}
		eo := o
		eo.From, eo.To, eo.Progress = sp.Start, sp.End, nil
		rd, err := Read(ctx, e, eo)
		if err != nil {
			return nil, err
		}
		rep := Score(rd, DefaultThresholds())
		queries += rep.Queries
		reports = append(reports, rep)
		w := newWindow(sp.Start, sp.End)
		for i := range rep.Causes {
			rep.Causes[i].Window = &w
		}
		eps = append(eps, Episode{Window: w, Peak: math.Round(c.peak*100) / 100, Where: c.where, Verdict: rep.Verdict, Summary: rep.Summary,
			Lead: rep.Lead, Confidence: rep.Confidence, Causes: rep.Causes})
	}
	return longReport(o, eps, reports, queries, r.rd.Notices), nil
}

// subjectTimes adds each subject's (version on instance) queue, compute and network series into
// its time per request, keyed and sorted by the subject's name.
func (r *reader) subjectTimes(series []engine.Series) (map[string]*engine.Series, []string) {
	return r.subjectSum(series, "queue", "compute", "network")
}

// subjectSum adds, per subject (model version on instance), the series named in names; a point
// missing from any but "network" is missing from the sum.
func (r *reader) subjectSum(series []engine.Series, names ...string) (map[string]*engine.Series, []string) {
	total := map[string]*engine.Series{}
	var keys []string
	for _, s := range series {
		if !slices.Contains(names, s.Name) {
			continue
		}
		in := s.Labels[r.instLbl]
		if r.rd.Node != "" && nodeOf(in) != r.rd.Node {
			continue
		}
		k := subjectText(r.o.Model, s.Labels[r.verLbl]) + " on " + in
		t, ok := total[k]
		if !ok {
			t = &engine.Series{T: s.T, V: make([]float64, len(s.T))}
			total[k] = t
			keys = append(keys, k)
		}
		for i := range t.V {
			if i < len(s.V) && finite(s.V[i]) {
				t.V[i] += s.V[i]
			} else if s.Name != "network" {
				t.V[i] = math.NaN() // queue and compute are the service's own: both or nothing
			}
		}
	}
	sort.Strings(keys)
	return total, keys
}

// longReport merges the episodes' triages into the long window's report: every episode's
// causes (each with its window), strongest first; the verdict is the strongest episode's.
func longReport(o Options, eps []Episode, reports []Report, queries int, notices []string) *Report {
	rep := &Report{Model: o.Model, Version: o.Version, Instance: o.Instance, Node: o.Node, GPU: o.GPU,
		Window: newWindow(o.From, o.To), Before: newWindow(o.From.Add(-o.Before), o.From), Episodes: eps, Queries: queries,
		Causes: []Cause{}, Segments: []SegmentChange{}, NotMeasured: []string{}, Verdict: Healthy, Confidence: "high"}
	var parts []string
	best := -1
	rank := map[Verdict]int{Healthy: 0, NoDirection: 1, Diagnosed: 2}
	for i, ep := range eps {
		rep.Causes = append(rep.Causes, ep.Causes...)
		what := string(ep.Verdict)
		if ep.Verdict == Diagnosed && len(ep.Causes) > 0 {
			what = ep.Causes[0].ID + " (" + ep.Causes[0].Confidence + ")"
		}
		parts = append(parts, fmt.Sprintf("%s–%s %s: %s", ep.Window.Start.Format("15:04"), ep.Window.End.Format("15:04"), ep.Where, what))
		top := 0.0
		if len(ep.Causes) > 0 {
			top = ep.Causes[0].Score
		}
		if best < 0 || rank[ep.Verdict] > rank[eps[best].Verdict] || (ep.Verdict == eps[best].Verdict && top > topScore(eps[best])) {
			best = i
		}
		notices = append(notices, reports[i].Notices...)
		for _, n := range reports[i].NotMeasured {
			rep.NotMeasured = appendUnique(rep.NotMeasured, n)
		}
	}
	sort.SliceStable(rep.Causes, func(i, j int) bool { return rep.Causes[i].Score > rep.Causes[j].Score })
	b := reports[best]
	rep.Verdict, rep.Confidence, rep.Segments, rep.Lead, rep.SegmentsOf, rep.Steps = b.Verdict, b.Confidence, b.Segments, b.Lead, b.SegmentsOf, b.Steps
	rep.Summary = fmt.Sprintf("%d change point(s) in the %s window, each triaged against the hour before it: %s", len(eps), dur(o.To.Sub(o.From)), strings.Join(parts, "; "))
	rep.Notices = uniqueSorted(notices)
	return rep
}

func topScore(ep Episode) float64 {
	if len(ep.Causes) == 0 {
		return 0
	}
	return ep.Causes[0].Score
}
