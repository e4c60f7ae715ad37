package backtest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

type events struct {
	warmups, deploys []Event
	notices          []string
}

// readEvents reads the warm-ups, as the engine's warm-up filter marks them (a request-rate
// query with the filter on records the stretches it drops), and the deploys: a model version
// whose request counters appear on an instance after the range starts.
func readEvents(ctx context.Context, e *engine.Engine, from, to time.Time, interval time.Duration) (events, error) {
	var ev events
	q, err := engine.Throughput{By: "instance"}.Query()
	if err != nil {
		return ev, err
	}
	var spans []engine.WarmupInterval
	for _, c := range chunks(from, to, interval, chunkSize(e)) {
		res, err := e.Run(ctx, q, engine.Range{Start: c[0], End: c[1], MinStep: interval})
		if err != nil {
			return ev, fmt.Errorf("reading the warm-ups: %w", err)
		}
		spans = append(spans, res.Warmup...)
	}
	ev.warmups = mergeWarmups(spans, interval)

	ev.deploys, err = readDeploys(ctx, e, from, to, interval)
	if err != nil {
		return ev, fmt.Errorf("reading the deploys: %w", err)
	}
	if e.Profile.ModelLabel == "" {
		ev.notices = append(ev.notices, fmt.Sprintf("%s metrics carry no model label: deploys cannot be told apart", e.Profile.Title))
	} else if e.Profile.VersionLabel == "" {
		ev.notices = append(ev.notices, fmt.Sprintf("%s metrics carry no version label: only a model appearing on an instance counts as a deploy", e.Profile.Title))
	}
	return ev, nil
}

// mergeWarmups joins the engine's per-model stretches into one list per instance: stretches
// that overlap or touch (within one interval, as chunk edges cut them) become one.
func mergeWarmups(spans []engine.WarmupInterval, interval time.Duration) []Event {
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].Instance != spans[j].Instance {
			return spans[i].Instance < spans[j].Instance
		}
		return spans[i].Start.Before(spans[j].Start)
	})
	out := []Event{}
	for _, s := range spans {
		if n := len(out); n > 0 && out[n-1].Instance == s.Instance && !s.Start.After(out[n-1].End.Add(interval)) {
			if s.End.After(out[n-1].End) {
				out[n-1].End = s.End.UTC()
			}
			continue
		}
		out = append(out, Event{Kind: KindWarmup, Instance: s.Instance, Start: s.Start.UTC(), End: s.End.UTC()})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// readDeploys finds the model versions that appear on an instance inside the range: their
// request counters exist at some evaluation time and not at the first (one interval before
// the range). A deploy's stretch is its first sample and the warm-up window after it.
func readDeploys(ctx context.Context, e *engine.Engine, from, to time.Time, interval time.Duration) ([]Event, error) {
	out := []Event{}
	var m profile.Measure
	if e.Present == nil {
		ms, _ := e.Profile.Measures(profile.Requests)
		if len(ms) == 0 {
			return out, nil
		}
		m = ms[0]
	} else {
		var ok bool
		if m, ok, _ = e.Profile.Resolve(profile.Requests, e.Present); !ok {
			return out, nil
		}
	}
	il, ml, vl := e.Profile.InstanceLabel, e.Profile.ModelLabel, e.Profile.VersionLabel
	if il == "" {
		il = "instance"
	}
	if ml == "" {
		return out, nil
	}
	by := []string{il, ml}
	if vl != "" {
		by = append(by, vl)
	}
	ms := append([]prom.Matcher{prom.In("__name__", m.Metrics...)}, prom.EqAll(m.Matchers)...)
	sel, err := prom.Selector("", ms...)
	if err != nil {
		return nil, err
	}
	expr := "group by (" + strings.Join(by, ", ") + ") (" + sel + ")"
	window := e.WarmupWindow
	if window <= 0 {
		window = derive.DefaultWarmupWindow
	}
	first := from.Add(-interval)
	firstMs := first.UnixMilli() / interval.Milliseconds() * interval.Milliseconds()
	seen := map[string]Event{}
	var order []string
	for _, c := range chunks(first, to, interval, 11000) {
		res, err := e.Prom.QueryRange(ctx, prom.RangeQuery{Expr: expr, Start: c[0], End: c[1], Step: interval, MaxSeries: 10000})
		if err != nil {
			return nil, err
		}
		for _, s := range res.Series {
			if len(s.Points) == 0 {
				continue
			}
			k := s.Labels[il] + "\xff" + s.Labels[ml] + "\xff" + s.Labels[vl]
			if _, ok := seen[k]; ok {
				continue // chunks are in time order: the first sample came earlier
			}
			at := s.Points[0].T.UTC()
			seen[k] = Event{Kind: KindDeploy, Instance: s.Labels[il], Model: s.Labels[ml], Version: s.Labels[vl], Start: at, End: at.Add(window)}
			order = append(order, k)
		}
	}
	for _, k := range order {
		if x := seen[k]; x.Start.UnixMilli() > firstMs { // not there when the range started
			out = append(out, x)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Start.Equal(out[j].Start) {
			return out[i].Start.Before(out[j].Start)
		}
		return out[i].Instance+out[i].Model+out[i].Version < out[j].Instance+out[j].Model+out[j].Version
	})
	return out, nil
}
