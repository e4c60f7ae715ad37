package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/inferscope/inferscope/pkg/prom"
)

// Reader is the one door through which the answers built on the engine (triage, gate,
// backtest, report) read Prometheus beyond the query types: each of its typed calls assembles
// its PromQL here, runs it under the engine's limits (long ranges in chunks within Prometheus'
// point limit, each answer capped in series and in samples), counts the Prometheus queries it
// sends and keeps Prometheus' warnings as notices. A Reader is safe for concurrent use; make
// one per answer with Engine.Reader.
type Reader struct {
	e      *Engine
	limits Limits

	mu      sync.Mutex
	queries int
	notices []string
	seen    map[string]bool
}

// Reader returns a new reader on the engine's Prometheus, with its own query count and notices.
func (e *Engine) Reader() *Reader {
	return &Reader{e: e, limits: e.Limits.withDefaults(), seen: map[string]bool{}}
}

// Queries is the number of Prometheus queries the reader has sent.
func (r *Reader) Queries() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.queries
}

// Notices are the warnings Prometheus attached to the reader's answers, each once, in name
// order (reads finish in any order; an answer must not).
func (r *Reader) Notices() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.notices)
	slices.Sort(out)
	return out
}

func (r *Reader) record(warnings []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queries++
	for _, w := range warnings {
		if t := "Prometheus: " + w; !r.seen[t] {
			r.seen[t] = true
			r.notices = append(r.notices, t)
		}
	}
}

// Sample is one series' value of an instant read.
type Sample struct {
	Labels Labels
	V      float64
}

// Labels is a series' label set as the engine hands it to the packages above it.
type Labels map[string]string

// String renders the labels as `{a="x", b="y"}` in name order, values quoted as PromQL
// literals: a stable key for sorting and merging series.
func (l Labels) String() string { return prom.Labels(l).String() }

// RuleSeries runs a rule's PromQL data query, as pkg/alerting renders it, over [from, to] at
// step (from aligned down to the step, as Grafana's alerting aligns its evaluations): one series
// per label set with the points Prometheus returned.
func (r *Reader) RuleSeries(ctx context.Context, expr string, from, to time.Time, step time.Duration) ([]Series, error) {
	if step <= 0 {
		return nil, errors.New("the step must be positive")
	}
	ms := step.Milliseconds()
	start := time.UnixMilli(from.UnixMilli() / ms * ms).UTC()
	return r.rangeRead(ctx, expr, start, to, step)
}

// rangeRead runs expr at step from start (the first point) to end, in chunks of at most
// Prometheus' point limit, and joins each series' chunks. A series holds only the points
// Prometheus returned. The series are in label order.
func (r *Reader) rangeRead(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error) {
	if r.e.Prom == nil {
		return nil, errors.New("no Prometheus is configured")
	}
	if step <= 0 {
		return nil, errors.New("the step must be positive")
	}
	if end.Before(start) {
		return nil, fmt.Errorf("the range ends (%s) before it starts (%s)", end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
	}
	points := int(end.Sub(start)/step) + 1
	perChunk := min(points, prometheusMaxPoints)
	maxSeries := r.maxSeries(perChunk)
	merged := map[string]*Series{}
	for a := start; !a.After(end); a = a.Add(prometheusMaxPoints * step) {
		b := a.Add((prometheusMaxPoints - 1) * step)
		if b.After(end) {
			b = end
		}
		res, err := r.e.Prom.QueryRange(ctx, prom.RangeQuery{Expr: expr, Start: a, End: b, Step: step, MaxSeries: maxSeries})
		if err != nil {
			r.record(nil)
			return nil, r.limitError(err, perChunk)
		}
		r.record(res.Warnings)
		for _, s := range res.Series {
			key := s.Labels.String()
			m, ok := merged[key]
			if !ok {
				if len(merged) >= maxSeries {
					return nil, &LimitError{Msg: fmt.Sprintf("the query returned more than %d series across its time chunks", maxSeries)}
				}
				m = &Series{Labels: s.Labels}
				merged[key] = m
			}
			for _, p := range s.Points {
				t := p.T.UnixMilli()
				if n := len(m.T); n > 0 && t <= m.T[n-1] {
					continue // chunks do not overlap; keep the order ascending anyway
				}
				m.T = append(m.T, t)
				m.V = append(m.V, p.V)
			}
		}
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Series, len(keys))
	for i, k := range keys {
		out[i] = *merged[k]
	}
	return out, nil
}

// instant runs expr at one time under the engine's series limit.
func (r *Reader) instant(ctx context.Context, expr string, at time.Time) ([]Sample, error) {
	if r.e.Prom == nil {
		return nil, errors.New("no Prometheus is configured")
	}
	res, err := r.e.Prom.Query(ctx, expr, at, r.maxSeries(1))
	if err != nil {
		r.record(nil)
		return nil, r.limitError(err, 1)
	}
	r.record(res.Warnings)
	out := make([]Sample, len(res.Samples))
	for i, s := range res.Samples {
		out[i] = Sample{Labels: Labels(s.Labels), V: s.V}
	}
	slices.SortFunc(out, func(a, b Sample) int { return cmp.Compare(a.Labels.String(), b.Labels.String()) })
	return out, nil
}

// maxSeries is the most series one answer of points points per series may hold: the engine's
// series limit, and its sample limit divided by the points.
func (r *Reader) maxSeries(points int) int {
	return max(1, min(r.limits.MaxSeries, r.limits.MaxSamples/max(1, points)))
}

func (r *Reader) limitError(err error, points int) error {
	if prom.KindOf(err) != prom.KindLimit {
		return err
	}
	return &LimitError{Msg: fmt.Sprintf("%s; the limits are %d series and %d samples per query (%d points per series here): narrow the selection, shorten the range or raise the step",
		err.Error(), r.limits.MaxSeries, r.limits.MaxSamples, points)}
}

// sortedSelector writes a selector with its matchers in label order (then operator and
// values), so the same question always reads the same text whatever order the matchers were
// gathered in (a profile's fixed matchers come from a map).
func sortedSelector(metric string, ms ...prom.Matcher) (string, error) {
	ms = slices.Clone(ms)
	slices.SortStableFunc(ms, func(a, b prom.Matcher) int {
		return cmp.Or(cmp.Compare(a.Label, b.Label), cmp.Compare(a.Type, b.Type), cmp.Compare(a.Value, b.Value))
	})
	return prom.Selector(metric, ms...)
}
