package backtest

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
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

// readDeploys finds the model versions that appear on an instance inside the range (the
// engine's deploy events). A deploy's stretch is its first sample and the warm-up window after
// it.
func readDeploys(ctx context.Context, e *engine.Engine, from, to time.Time, interval time.Duration) ([]Event, error) {
	deploys, err := e.Reader().DeployEvents(ctx, from, to, interval)
	if err != nil {
		return nil, err
	}
	window := e.WarmupWindowOrDefault()
	out := make([]Event, len(deploys))
	for i, d := range deploys {
		out[i] = Event{Kind: KindDeploy, Instance: d.Instance, Model: d.Model, Version: d.Version, Start: d.At, End: d.At.Add(window)}
	}
	return out, nil
}
