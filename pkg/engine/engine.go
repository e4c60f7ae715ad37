package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/gateway"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// Limits bound what one query may cost. Zero fields take DefaultLimits' values.
type Limits struct {
	MaxSeries int           // series in a result
	MaxPoints int           // points per series (Prometheus refuses more than 11,000 per query)
	MaxRange  time.Duration // length of the queried time range
	// MaxSamples bounds the samples fetched by one Prometheus call (series × points), which is
	// what the plugin holds in memory while it converts the answer.
	MaxSamples int
}

// DefaultLimits are the limits the data source runs with unless configured otherwise.
var DefaultLimits = Limits{MaxSeries: 1000, MaxPoints: 11000, MaxRange: 31 * 24 * time.Hour, MaxSamples: 4_000_000}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxSeries <= 0 {
		l.MaxSeries = d.MaxSeries
	}
	if l.MaxPoints <= 0 {
		l.MaxPoints = d.MaxPoints
	}
	if l.MaxRange <= 0 {
		l.MaxRange = d.MaxRange
	}
	if l.MaxSamples <= 0 {
		l.MaxSamples = d.MaxSamples
	}
	return l
}

// prometheusMaxPoints is the most points Prometheus returns per series of one range query.
const prometheusMaxPoints = 11000

// Engine holds what a query runs against: the Prometheus, the metric profiles (label renames
// applied) and the warm-up window. Build it with New. An Engine is cheap to build per request
// and safe for concurrent use by several Run calls.
type Engine struct {
	Prom *prom.Client
	// Profile reads every model when Fleet is nil or holds one server; with several servers it
	// is the primary one (Fleet.Primary), which reads what is not split by model.
	Profile profile.Profile
	// Fleet says which profile serves each model (nil: Profile serves them all).
	Fleet *Fleet
	// Present holds the metric names Prometheus has (as its __name__ label values list them), so
	// profile.Resolve can pick the measure that exists. Nil means unknown: every role takes its
	// first measure.
	Present      map[string]bool
	WarmupWindow time.Duration // 0 = derive.DefaultWarmupWindow
	Limits       Limits
	// Gateway gives the network segment (nil: only a profile's own gateway histogram can).
	Gateway *gateway.Gateway
	// ProbeURLs and ProbeHTTP reach the configured GPU probes, for the types that read them live.
	ProbeURLs []string
	ProbeHTTP *http.Client
	// History keeps the previous days read by baseline queries across queries (nil = none).
	History *HistoryCache
	// Now is the wall clock (nil = time.Now); the history cache keeps only settled samples.
	Now func() time.Time
	// catalog caches the label values subjects are checked against (nil: read afresh).
	catalog *Catalog
}

// Clock is the engine's current time: Now, or the wall clock without one.
func (e *Engine) Clock() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Range is the time range of a query. Start and End are inclusive; the step is chosen from MinStep
// (the panel's interval) and the point limit, like Grafana's Prometheus data source does.
type Range struct {
	Start, End time.Time
	MinStep    time.Duration
	// MaxPoints, when positive, coarsens the step further (the panel's maxDataPoints).
	MaxPoints int
	// AlignEnd ends the grid at End itself (to the second), its points End − k × step, instead
	// of at the last multiple of the step: a question asked now reads up to now. At a 1-minute
	// step and 15-second scrapes, a grid of multiples leaves out up to the last 45 seconds,
	// which hold the whole of an incident that paged at once.
	AlignEnd bool
}

// EndAlignedStart is the first point of a grid that ends at End (to the second) with points step
// apart and starts at Start or whole steps before it: the grid AlignEnd asks for, for a PromQL
// range read beside the engine's queries on the same points.
func (r Range) EndAlignedStart(step time.Duration) time.Time {
	end := r.End.Truncate(time.Second)
	return end.Add(-((end.Sub(r.Start) + step - 1) / step) * step)
}

// Runner is a parsed query of one type, ready to run.
type Runner interface {
	Run(ctx context.Context, x *Exec) error
}

// Run executes a parsed query over r.
func (e *Engine) Run(ctx context.Context, q Query, r Range) (*Result, error) {
	if q.runner == nil {
		return nil, errors.New("the query was not parsed: use engine.Parse")
	}
	if e.Prom == nil {
		return nil, errors.New("no Prometheus is configured")
	}
	groups := e.plan(q.Common)
	if len(groups) == 1 {
		c := q.Common
		c.Model = groups[0].models
		return e.runAs(ctx, q.runner, c, groups[0].prof, r)
	}
	// Each server's models are read with its own profile, the servers in parallel.
	results := make([]*Result, len(groups))
	err := parallel(ctx, len(groups), func(ctx context.Context, i int) error {
		c := q.Common
		c.Model = groups[i].models
		res, err := e.runAs(ctx, q.runner, c, groups[i].prof, r)
		if err != nil {
			return fmt.Errorf("%s: %w", serverTitle(groups[i].prof), err)
		}
		results[i] = res
		return nil
	})
	if err != nil {
		return nil, err
	}
	res := merge(groups, results)
	if limit := e.Limits.withDefaults().MaxSeries; len(res.Series) > limit {
		return nil, &LimitError{Msg: fmt.Sprintf(
			"the query would return %d series, more than the limit of %d: choose fewer models, versions or instances", len(res.Series), limit)}
	}
	return res, nil
}

// runAs runs the query's runner with one profile.
func (e *Engine) runAs(ctx context.Context, run Runner, c Common, p profile.Profile, r Range) (*Result, error) {
	x, err := e.newExec(c, p, r)
	if err != nil {
		return nil, err
	}
	if err := run.Run(ctx, x); err != nil {
		return nil, err
	}
	return x.result()
}

// Exec is one running query: the grid, the label names, the selection and the result being built.
// Runners use its methods to fetch and to add series and notices; it is safe for concurrent use.
type Exec struct {
	e      *Engine
	prof   profile.Profile // the profile of the server being read
	q      Common
	limits Limits
	g      grid
	rng    Range         // the range asked for, before the grid rounds it
	step   time.Duration // the step a runner chose itself (setStep), else the grid's
	// Label names of the profile (after renames); "" where the server has none.
	modelLabel, versionLabel, instanceLabel string

	pad      time.Duration // extra history before the range (SetPadding)
	gridOnce sync.Once
	gridT    []int64

	mu       sync.Mutex
	res      Result
	noticed  map[string]bool
	promInfo *promInfos // Prometheus' info annotations, one notice (annotations.go)
	splits   *splits    // reads split for the store's sample limit, one notice (fetch_split.go)
	warmOnce sync.Once
	warm     *warmState
	warmErr  error
}

func (e *Engine) newExec(c Common, p profile.Profile, r Range) (*Exec, error) {
	limits := e.Limits.withDefaults()
	g, err := newGrid(r, limits)
	if err != nil {
		return nil, err
	}
	x := &Exec{
		e: e, prof: p, q: c, limits: limits, g: g, rng: r,
		modelLabel: p.ModelLabel, versionLabel: p.VersionLabel, instanceLabel: p.InstanceLabel,
		noticed: map[string]bool{},
	}
	if x.instanceLabel == "" {
		x.instanceLabel = "instance"
	}
	if len(c.Model) > 0 && x.modelLabel == "" {
		x.Notice(Warning, fmt.Sprintf("the model filter is ignored: %s metrics carry no model label (%s)", p.Title, p.LabelNote))
	}
	if len(c.Version) > 0 && x.versionLabel == "" {
		x.Notice(Warning, fmt.Sprintf("the version filter is ignored: %s metrics carry no version label", p.Title))
	}
	return x, nil
}

// Common returns the query's shared fields.
func (x *Exec) Common() Common { return x.q }

// Profile returns the profile of the server being read.
func (x *Exec) Profile() profile.Profile { return x.prof }

// Engine returns the engine the query runs on.
func (x *Exec) Engine() *Engine { return x.e }

// Limits returns the effective limits.
func (x *Exec) Limits() Limits { return x.limits }

// Grid returns the output timestamps (Unix ms) and the step.
func (x *Exec) Grid() ([]int64, time.Duration) { return x.g.out(), x.g.step }

// RateWindow is the window of every rate() the query takes.
func (x *Exec) RateWindow() time.Duration { return x.rateWindow() }

// Notice adds a notice once (repeated texts are dropped).
func (x *Exec) Notice(sev Severity, text string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.noticed[text] {
		return
	}
	x.noticed[text] = true
	x.res.Notices = append(x.res.Notices, Notice{Severity: sev, Text: text})
}

// Add appends result series. Values are expected on the output grid.
func (x *Exec) Add(s ...Series) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.res.Series = append(x.res.Series, s...)
}

// AddTable appends a table result.
func (x *Exec) AddTable(t Table) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.res.Tables = append(x.res.Tables, t)
}

// setStep records a step a runner chose instead of the grid's (the PromQL passthrough).
func (x *Exec) setStep(step time.Duration) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.step = step
}

func (x *Exec) executed(expr string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.res.Queries = append(x.res.Queries, expr)
}

func (x *Exec) result() (*Result, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	res := x.res
	res.Step = x.g.step
	if x.step > 0 {
		res.Step = x.step
	}
	if len(x.q.Series) > 0 {
		keep := map[string]bool{}
		for _, n := range x.q.Series {
			keep[n] = true
		}
		kept := res.Series[:0:0]
		for _, s := range res.Series {
			if keep[s.Name] {
				kept = append(kept, s)
			}
		}
		res.Series = kept
	}
	if len(res.Series) > x.limits.MaxSeries {
		return nil, seriesLimitError(len(res.Series), x.limits.MaxSeries)
	}
	sortSeries(res.Series)
	sort.SliceStable(res.Warmup, func(i, j int) bool {
		a, b := res.Warmup[i], res.Warmup[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		return a.Instance+"\xff"+a.Model < b.Instance+"\xff"+b.Model
	})
	return &res, nil
}

// LimitError is a query refused because it would exceed a limit.
type LimitError struct{ Msg string }

// seriesLimitError refuses an answer of n series.
func seriesLimitError(n, limit int) *LimitError {
	return &LimitError{Msg: fmt.Sprintf("the query would return %d series, more than the limit of %d: choose fewer models, versions or instances", n, limit)}
}

func (e *LimitError) Error() string { return e.Msg }

// grid is the query's timestamps: the output range and, before it, the padding that windows
// (rates, warm-up, trailing baselines) need to be right at the first output point.
type grid struct {
	start, end int64 // output range, Unix ms, multiples of step
	step       time.Duration
}

func newGrid(r Range, l Limits) (grid, error) {
	if r.Start.IsZero() || r.End.IsZero() {
		return grid{}, errors.New("the query has no time range")
	}
	if r.End.Before(r.Start) {
		return grid{}, fmt.Errorf("the time range ends (%s) before it starts (%s)", r.End.UTC().Format(time.RFC3339), r.Start.UTC().Format(time.RFC3339))
	}
	if span := r.End.Sub(r.Start); span > l.MaxRange {
		return grid{}, &LimitError{Msg: fmt.Sprintf("the time range (%s) is longer than the limit of %s: choose a shorter range",
			formatDuration(span.Round(time.Second)), formatDuration(l.MaxRange))}
	}
	// A few points are kept in reserve for the padding before the range.
	maxPoints := min(l.MaxPoints, prometheusMaxPoints-padReserve)
	if r.MaxPoints > 0 {
		maxPoints = min(maxPoints, r.MaxPoints)
	}
	step := prom.StepFor(r.Start, r.End, r.MinStep, max(1, maxPoints))
	if step%time.Second != 0 && step > time.Second {
		step = step.Truncate(time.Second) + time.Second // whole seconds keep day offsets on the grid
	}
	ms := step.Milliseconds()
	start := r.Start.UnixMilli() / ms * ms
	end := r.End.UnixMilli() / ms * ms
	if r.AlignEnd {
		end = r.End.Truncate(time.Second).UnixMilli()
		start = r.EndAlignedStart(step).UnixMilli()
	}
	return grid{start: start, end: end, step: step}, nil
}

// padReserve is how many points a query may add before the output range for its windows.
const padReserve = 16

func (g grid) out() []int64 {
	t, _ := derive.Grid(g.start, g.end, g.step.Milliseconds())
	return t
}

// from returns the grid start padded by d (rounded up to whole steps), bounded so the fetch stays
// within Prometheus' point limit.
func (g grid) from(d time.Duration) int64 {
	ms := g.step.Milliseconds()
	n := (d.Milliseconds() + ms - 1) / ms
	points := (g.end-g.start)/ms + 1
	if points+n > prometheusMaxPoints {
		n = max(0, prometheusMaxPoints-points)
	}
	return g.start - n*ms
}

func (x *Exec) rateWindow() time.Duration {
	w := x.q.RateInterval
	if w <= 0 {
		w = defaultRateWindow
	}
	return max(w, x.g.step)
}

// defaultRateWindow is the rate() window unless the query sets rateInterval: long enough to hold
// several scrapes at the usual 15 s to 60 s intervals, short enough to show a change within
// minutes. A coarser step widens it to the step, so no sample is skipped.
const defaultRateWindow = 5 * time.Minute

func (x *Exec) warmupWindow() time.Duration {
	if x.e.WarmupWindow > 0 {
		return x.e.WarmupWindow
	}
	return derive.DefaultWarmupWindow
}

// labelsText renders a label set for messages.
func labelsText(l map[string]string) string {
	if len(l) == 0 {
		return "{}"
	}
	return prom.Labels(l).String()
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}
