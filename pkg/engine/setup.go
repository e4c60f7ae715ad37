package engine

import (
	"context"
	"slices"
	"time"

	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/setup"
)

// SetupChecks judges the store's retention and how often the jobs that serve the fleet's
// inference and GPU series are scraped (pkg/setup), and warns when TorchServe is found without
// its ts_* metrics (metrics_mode=prometheus is needed). The watched jobs are the job labels of the
// series that carry the servers' characteristic names or the GPU utilisation (the label-values
// API with match[]: the index only, however large the fleet). Only a failed connection is an
// error; a store without Prometheus' status API gets findings that say it was not checked.
func (e *Engine) SetupChecks(ctx context.Context) ([]setup.Finding, error) {
	if e.Prom == nil {
		return nil, &ConfigError{Msg: "no Prometheus is configured"}
	}
	st, err := e.Prom.Setup(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	if e.Fleet != nil {
		for _, s := range e.Fleet.Servers {
			names = append(names, s.Matched...)
		}
	}
	for _, src := range gpuSources[GPUUtil] {
		if e.Present == nil || e.Present[src.metric] {
			names = append(names, src.metric)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var jobs []string
	if len(names) > 0 {
		sel, err := prom.Selector("", prom.In("__name__", names...))
		if err != nil {
			return nil, err
		}
		if jobs, err = e.Prom.LabelValues(ctx, "job", []string{sel}, e.Clock().Add(-setupLookback), e.Clock()); err != nil {
			return nil, err
		}
	}
	findings := setup.Check(setup.Store{
		Retention: st.Retention, RetentionKnown: st.RetentionKnown, RetentionWhy: st.RetentionWhy,
		Jobs: st.Jobs, IntervalsKnown: st.IntervalsKnown, IntervalsWhy: st.IntervalsWhy,
	}, jobs)
	// TorchServe in its default log mode is found only by what is missing; the check is advice,
	// so a store that cannot answer it (no instant queries, no scrape series) adds nothing.
	if ts, err := e.torchServeFindings(ctx); err == nil {
		findings = append(findings, ts...)
	}
	return findings, nil
}

// setupLookback is how far back the watched jobs are looked for: the jobs scraped now, not
// those of last month's history.
const setupLookback = time.Hour
