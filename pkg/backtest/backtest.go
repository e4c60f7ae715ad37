// Package backtest replays the alert-rule catalog over Prometheus history: for each rule it runs
// the rule's data query once over the whole range (the engine query type, or the PromQL, its
// Grafana rendering sends), then evaluates it at every evaluation time exactly as Grafana would
// (reduce to the last finite value, the condition, the for-hold state machine), and reports how
// often each rule would have fired, for how long, and which episodes overlap a warm-up or a
// deploy. Reduce and Simulate (eval.go) are the pure part; Run reads Prometheus.
package backtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http/httptrace"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/clip"
	"github.com/inferscope/inferscope/pkg/engine"
)

// ErrOptions wraps a wrong question (unknown rule, bad range, bad parameters): the caller's
// mistake, not Prometheus'.
var ErrOptions = errors.New("bad backtest options")

// Range bounds.
const (
	DefaultRange = 7 * 24 * time.Hour
	MaxRange     = 31 * 24 * time.Hour
)

// Options is one backtest: the catalog parameters (thresholds, interval, profile names), the
// history to replay and the rules to replay (empty = all).
type Options struct {
	Params   alerting.Params
	From, To time.Time
	Rules    []string
}

// WithDefaults fills a zero To with now and a zero From with To − DefaultRange.
func (o Options) WithDefaults(now time.Time) Options {
	if o.To.IsZero() {
		o.To = now
	}
	if o.From.IsZero() {
		o.From = o.To.Add(-DefaultRange)
	}
	o.From, o.To = o.From.UTC(), o.To.UTC()
	return o
}

// Validate reports the first wrong field, naming it.
func (o Options) Validate() error {
	if o.From.IsZero() || o.To.IsZero() {
		return errors.New("from and to are required")
	}
	if !o.From.Before(o.To) {
		return fmt.Errorf("from (%s) must be before to (%s)", o.From.Format(time.RFC3339), o.To.Format(time.RFC3339))
	}
	if d := o.To.Sub(o.From); d > MaxRange {
		return fmt.Errorf("the range from %s to %s is longer than %s", o.From.Format(time.RFC3339), o.To.Format(time.RFC3339), "31d")
	}
	if o.Params.Interval < time.Second {
		return fmt.Errorf("interval must be at least 1s, got %s", o.Params.Interval)
	}
	if o.To.Sub(o.From) < o.Params.Interval {
		return fmt.Errorf("the range (%s) is shorter than the evaluation interval (%s)", o.To.Sub(o.From), o.Params.Interval)
	}
	return o.Params.Validate()
}

// Report is the backtest's answer (docs/backtest.md; the data source's backtest resource and
// `inferscope backtest --json` answer it as it is).
type Report struct {
	From     time.Time    `json:"from"`
	To       time.Time    `json:"to"`
	Interval string       `json:"interval"`
	Rules    []RuleReport `json:"rules"`
	Warmups  []Event      `json:"warmups"`
	Deploys  []Event      `json:"deploys"`
	Queries  int64        `json:"queries"` // Prometheus round trips
	Seconds  float64      `json:"seconds"` // wall time of the whole backtest
	Notices  []string     `json:"notices"`
}

// RuleReport is one rule's replay.
type RuleReport struct {
	ID          string            `json:"id"`
	Alert       string            `json:"alert"`
	Title       string            `json:"title"`
	Severity    alerting.Severity `json:"severity"`
	For         string            `json:"for"`
	Unavailable string            `json:"unavailable"` // why the metric profile cannot feed it
	Error       string            `json:"error"`       // why its replay failed
	// Fired counts the episodes that reached Firing; FiringSeconds adds their lengths.
	Fired         int             `json:"fired"`
	FiringSeconds float64         `json:"firingSeconds"`
	Evaluations   int             `json:"evaluations"` // evaluation times in the range
	Episodes      []EpisodeReport `json:"episodes"`
	// plans are the rule's evaluation plans: one, or on a fleet one per server for a PromQL rule
	// (none when unavailable).
	plans  []*alerting.Plan
	labels labelNames // label names of the engine's servers, for overlaps
}

// EpisodeReport is one firing stretch of one series (alert instance) of a rule.
type EpisodeReport struct {
	Labels  map[string]string `json:"labels"`
	Start   time.Time         `json:"start"` // first Firing evaluation (after `for`)
	End     time.Time         `json:"end"`   // the evaluation that resolved it, or the range end
	Open    bool              `json:"open"`
	Seconds float64           `json:"seconds"`
	Peak    float64           `json:"peak"`
	// Unit is the unit of Peak, as the data query's series name it (Grafana's unit ids: "s",
	// "percentunit", "reqps", …; "" for a PromQL rule, whose series carry none).
	Unit     string  `json:"unit,omitempty"`
	Overlaps []Event `json:"overlaps"`
}

// Event is a warm-up (an instance restarting, not ready, or in its warm-up window, as the
// engine's warm-up filter marks it) or a deploy (a model version appearing on an instance).
type Event struct {
	Kind     string    `json:"kind"` // warmup or deploy
	Instance string    `json:"instance"`
	Model    string    `json:"model,omitempty"`
	Version  string    `json:"version,omitempty"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
}

// Event kinds.
const (
	KindWarmup = "warmup"
	KindDeploy = "deploy"
)

type engineLabelNames struct{ instance, model string }

// labelNames are the label names of each server of the engine (by profile name; "" for the
// engine's own profile), so an overlap is judged with the names of the series' server.
type labelNames map[string]engineLabelNames

func labelNamesOf(e *engine.Engine) labelNames {
	of := func(model, instance string) engineLabelNames {
		if instance == "" {
			instance = "instance"
		}
		return engineLabelNames{instance: instance, model: model}
	}
	out := labelNames{"": of(e.Profile.ModelLabel, e.Profile.InstanceLabel)}
	if e.Fleet != nil {
		for _, s := range e.Fleet.Servers {
			out[s.Profile.Name] = of(s.Profile.ModelLabel, s.Profile.InstanceLabel)
		}
	}
	return out
}

// of returns the names of the server a series carries (engine.ServerLabel), else the engine's.
func (l labelNames) of(series map[string]string) engineLabelNames {
	if n, ok := l[series[engine.ServerLabel]]; ok {
		return n
	}
	return l[""]
}

// workers bounds the rules replayed at the same time.
const workers = 3

// Run replays the rules over [o.From, o.To]. progress, when not nil, is called after each rule
// (done of total, the rule's id). A rule whose replay fails carries its error and the others
// go on; Run itself fails on bad options, when Prometheus cannot be read at all (the warm-up
// and deploy events come first), and when ctx ends.
func Run(ctx context.Context, e *engine.Engine, o Options, progress func(done, total int, ruleID string)) (*Report, error) {
	began := time.Now()
	o = o.WithDefaults(e.Clock())
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	p := o.Params
	catalog, err := alerting.Catalog(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	plans, err := alerting.Plans(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	rules, err := selectRules(o.Rules, catalog, plans, labelNamesOf(e))
	if err != nil {
		return nil, err
	}
	var trips atomic.Int64
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			trips.Add(1)
		}
	}})

	evals := EvalTimes(o.From, o.To, p.Interval)
	rep := &Report{From: o.From, To: o.To, Interval: alertDuration(p.Interval), Notices: []string{}, Rules: rules}

	ev, err := readEvents(ctx, e, o.From, o.To, p.Interval)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	rep.Warmups, rep.Deploys = ev.warmups, ev.deploys
	rep.Notices = append(rep.Notices, ev.notices...)

	replayAll(ctx, e, rep, o, evals, progress)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep.Queries = trips.Load()
	rep.Seconds = time.Since(began).Seconds()
	return rep, nil
}

// selectRules makes the report of each catalog rule asked for (every rule when ids is empty);
// an id the catalog lacks is a wrong question.
func selectRules(ids []string, catalog []alerting.Rule, plans []alerting.Plan, names labelNames) ([]RuleReport, error) {
	byID := map[string][]*alerting.Plan{}
	for i := range plans {
		byID[plans[i].Rule.ID] = append(byID[plans[i].Rule.ID], &plans[i])
	}
	want := map[string]bool{}
	for _, id := range ids {
		known := false
		for _, r := range catalog {
			known = known || r.ID == id
		}
		if !known {
			all := make([]string, len(catalog))
			for i, r := range catalog {
				all[i] = r.ID
			}
			return nil, fmt.Errorf("%w: unknown rule %q: the catalog has %s", ErrOptions, clip.Text(id, 60), strings.Join(all, ", "))
		}
		want[id] = true
	}
	var rules []RuleReport
	for _, r := range catalog {
		if len(want) > 0 && !want[r.ID] {
			continue
		}
		rules = append(rules, RuleReport{ID: r.ID, Alert: r.Alert, Title: r.Title, Severity: r.Severity, For: r.ForText,
			Unavailable: r.Unavailable, Episodes: []EpisodeReport{}, plans: byID[r.ID], labels: names})
	}
	return rules, nil
}

// replayAll replays rep's rules on a few workers, collecting each notice once in rep; it stops
// taking rules when ctx ends.
func replayAll(ctx context.Context, e *engine.Engine, rep *Report, o Options, evals []int64, progress func(done, total int, ruleID string)) {
	fetches := &fetchMemo{}
	var (
		mu      sync.Mutex
		done    int
		wg      sync.WaitGroup
		next    atomic.Int64
		notices = map[string]bool{}
	)
	for w := 0; w < min(workers, len(rep.Rules)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(rep.Rules) || ctx.Err() != nil {
					return
				}
				rr := &rep.Rules[i]
				var texts []string
				for _, pl := range rr.plans {
					texts = append(texts, replay(ctx, e, fetches, rr, pl, o, evals, rep.Warmups, rep.Deploys)...)
				}
				sortEpisodes(rr.Episodes)
				mu.Lock()
				for _, t := range texts {
					if !notices[t] {
						notices[t] = true
						rep.Notices = append(rep.Notices, t)
					}
				}
				done++
				if progress != nil {
					progress(done, len(rep.Rules), rr.ID)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// replay runs one plan of a rule and adds to its report; it returns the notices worth showing.
// A plan read from one server of a fleet marks its series with the engine's server label, as
// the engine marks the series of its own queries over a fleet.
func replay(ctx context.Context, e *engine.Engine, fetches *fetchMemo, rr *RuleReport, pl *alerting.Plan, o Options, evals []int64, warmups, deploys []Event) []string {
	rr.Evaluations = len(evals)
	lookback := time.Duration(pl.Query.RelativeTimeRange.From) * time.Second
	series, notices, err := fetches.fetch(ctx, e, pl, o.From.Add(-lookback), o.To, o.Params.Interval)
	if err != nil {
		if pl.Server != "" {
			err = fmt.Errorf("%s: %w", pl.Server, err)
		}
		rr.Error = strings.TrimPrefix(rr.Error+"; "+err.Error(), "; ")
		return nil
	}
	var texts []string
	for _, n := range notices {
		texts = append(texts, rr.ID+": "+n)
	}
	rate := o.Params.RateWindow
	for _, s := range series {
		labels := s.Labels
		if pl.Server != "" {
			labels = maps.Clone(s.Labels)
			labels[engine.ServerLabel] = pl.Server
		}
		reduced := Reduce(s.T, s.V, evals, lookback)
		for _, ep := range Simulate(evals, reduced, pl.Condition, pl.For) {
			er := EpisodeReport{Labels: labels, Start: ep.Start, End: ep.End, Open: ep.Open,
				Seconds: ep.End.Sub(ep.Start).Seconds(), Peak: ep.Peak, Unit: s.Unit, Overlaps: []Event{}}
			from := ep.Start.Add(-pl.For - rate)
			for _, list := range [][]Event{warmups, deploys} {
				for _, x := range list {
					if x.Start.After(ep.End) || x.End.Before(from) || !concerns(x, labels, rr.labels.of(labels)) {
						continue
					}
					er.Overlaps = append(er.Overlaps, x)
				}
			}
			rr.Episodes = append(rr.Episodes, er)
			rr.Fired++
			rr.FiringSeconds += er.Seconds
		}
	}
	return texts
}

// sortEpisodes orders a rule's episodes by start, then by their labels.
func sortEpisodes(eps []EpisodeReport) {
	sort.SliceStable(eps, func(i, j int) bool {
		a, b := eps[i], eps[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		return engine.Labels(a.Labels).String() < engine.Labels(b.Labels).String()
	})
}

// concerns says whether an event is about the subject of an alert series: the same instance,
// the same node (GPU rules), or, for series that sum over instances, the same model (a
// warm-up of any instance may show in a model's sum).
func concerns(x Event, labels map[string]string, n engineLabelNames) bool {
	if inst, ok := labels[n.instance]; ok {
		return inst == x.Instance
	}
	if node, ok := labels[alerting.NodeOutLabel]; ok {
		host, _, _ := strings.Cut(x.Instance, ":")
		return node == host || node == x.Instance
	}
	if model, ok := labels[n.model]; ok && n.model != "" && x.Kind == KindDeploy {
		return model == x.Model
	}
	return true
}

// track is one series of a rule's data query over the replayed range.
type track struct {
	Labels map[string]string
	Unit   string
	T      []int64
	V      []float64
}

// chunkPoints bounds the points of one engine run: within Prometheus' 11,000 points per query
// with room for the padding the engine adds before a range for its windows.
const chunkPoints = 10000

// fetchPlan runs the plan's data query over [from, to] at the interval, in chunks the engine
// keeps at that step.
// fetchMemo runs each distinct data query of a replay once: a P0 rule and its P1 sibling
// (latency, GPU memory) query the same signal and differ only in their condition.
type fetchMemo struct {
	mu   sync.Mutex
	runs map[string]*fetchRun
}

type fetchRun struct {
	done    chan struct{}
	tracks  []track
	notices []string
	err     error
}

func (m *fetchMemo) fetch(ctx context.Context, e *engine.Engine, pl *alerting.Plan, from, to time.Time, interval time.Duration) ([]track, []string, error) {
	model, err := json.Marshal(pl.Query.Model)
	if err != nil {
		return nil, nil, err
	}
	key := fmt.Sprintf("%s %s %d %d %d", pl.Query.QueryType, model, from.UnixMilli(), to.UnixMilli(), interval)
	m.mu.Lock()
	if m.runs == nil {
		m.runs = map[string]*fetchRun{}
	}
	r, shared := m.runs[key]
	if !shared {
		r = &fetchRun{done: make(chan struct{})}
		m.runs[key] = r
	}
	m.mu.Unlock()
	if !shared {
		r.tracks, r.notices, r.err = fetchPlan(ctx, e, pl, from, to, interval)
		close(r.done)
	}
	select {
	case <-r.done:
		return r.tracks, r.notices, r.err
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

func fetchPlan(ctx context.Context, e *engine.Engine, pl *alerting.Plan, from, to time.Time, interval time.Duration) ([]track, []string, error) {
	if pl.Query.QueryType == "promql" {
		expr, _ := pl.Query.Model["expr"].(string)
		s, err := promqlRange(ctx, e, expr, from, to, interval)
		return s, nil, err
	}
	q, err := parseModel(pl.Query.QueryType, pl.Query.Model)
	if err != nil {
		return nil, nil, err
	}
	m := newMerger()
	var notices []string
	seen := map[string]bool{}
	for _, c := range chunks(from, to, interval, chunkSize(e)) {
		res, err := e.Run(ctx, q, engine.Range{Start: c[0], End: c[1], MinStep: interval})
		if err != nil {
			return nil, nil, err
		}
		if res.Step != interval {
			return nil, nil, fmt.Errorf("the engine would evaluate at a %s step, not the %s interval: shorten the range or lengthen the interval", res.Step, interval)
		}
		for _, n := range res.Notices {
			if n.Severity != engine.Info && !seen[n.Text] {
				seen[n.Text] = true
				notices = append(notices, n.Text)
			}
		}
		for _, s := range res.Series {
			m.add(s.Labels, s.Unit, s.T, s.V)
		}
	}
	return m.tracks(), notices, nil
}

// promqlRange runs a PromQL data query, as the rule's Grafana rendering writes it, at the
// interval through the engine's reader (its limits and chunking).
func promqlRange(ctx context.Context, e *engine.Engine, expr string, from, to time.Time, interval time.Duration) ([]track, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("the rule's PromQL expression is empty")
	}
	series, err := e.Reader().RuleSeries(ctx, expr, from, to, interval)
	if err != nil {
		return nil, err
	}
	m := newMerger()
	for _, s := range series {
		m.add(s.Labels, "", s.T, s.V)
	}
	return m.tracks(), nil
}

func chunkSize(e *engine.Engine) int {
	n := chunkPoints
	if e.Limits.MaxPoints > 0 {
		n = min(n, e.Limits.MaxPoints-1)
	}
	return max(1, n)
}

// chunks splits [from, to], aligned down to the interval, into runs of at most n points.
func chunks(from, to time.Time, interval time.Duration, n int) [][2]time.Time {
	step := interval.Milliseconds()
	a := from.UnixMilli() / step * step
	end := to.UnixMilli()
	var out [][2]time.Time
	for ; a <= end; a += int64(n) * step {
		b := min(end, a+int64(n-1)*step)
		out = append(out, [2]time.Time{time.UnixMilli(a).UTC(), time.UnixMilli(b).UTC()})
	}
	return out
}

// merger joins the chunks of each series (by labels, without the series-name and metric-name
// labels, which say nothing about the alert's subject).
type merger struct {
	order []string
	byKey map[string]*track
}

func newMerger() *merger { return &merger{byKey: map[string]*track{}} }

func (m *merger) add(labels map[string]string, unit string, t []int64, v []float64) {
	l := make(map[string]string, len(labels))
	for k, val := range labels {
		if k != engine.SeriesLabel && k != "__name__" {
			l[k] = val
		}
	}
	key := engine.Labels(l).String()
	tr, ok := m.byKey[key]
	if !ok {
		tr = &track{Labels: l, Unit: unit}
		m.byKey[key] = tr
		m.order = append(m.order, key)
	}
	for i := range t {
		if n := len(tr.T); n > 0 && t[i] <= tr.T[n-1] {
			continue // chunks do not overlap; guard the ascending order anyway
		}
		tr.T = append(tr.T, t[i])
		tr.V = append(tr.V, v[i])
	}
}

func (m *merger) tracks() []track {
	sort.Strings(m.order)
	out := make([]track, len(m.order))
	for i, k := range m.order {
		out[i] = *m.byKey[k]
	}
	return out
}

// alertDuration writes d as Prometheus does ("1m", "0s").
func alertDuration(d time.Duration) string { return model.Duration(d).String() }

// parseModel parses a rule's stored query model (the JSON Grafana keeps) as the data source
// would.
func parseModel(queryType string, model map[string]any) (engine.Query, error) {
	raw, err := json.Marshal(model)
	if err != nil {
		return engine.Query{}, err
	}
	return engine.ParseAs(queryType, raw)
}
