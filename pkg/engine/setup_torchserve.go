package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/setup"
)

// TorchServe serves Prometheus metrics only with metrics_mode=prometheus (or legacy); its
// default, log, writes them to ts_metrics.log and model_metrics.log and its metrics API
// (port 8082) answers with no samples. What a Prometheus can still see of such a server:
const (
	// torchServeMetricsPort is the metrics API's default port (metrics_address).
	torchServeMetricsPort = "8082"
	// CheckTorchServeMode names the set-up finding.
	CheckTorchServeMode = "torchserve metrics mode"
	torchServeModeFix   = "set metrics_mode=prometheus in TorchServe's config.properties (or TS_METRICS_MODE=prometheus) and restart it; " +
		"keep the ts_metrics counters (ts_inference_requests_total, ts_inference_latency_microseconds, ts_queue_latency_microseconds) in its metrics.yaml"
)

// torchServeFrontend are names only TorchServe's frontend and handlers publish (metrics.yaml's
// ts_metrics and model_metrics): seen without the ts_* counters, TorchServe serves Prometheus
// metrics from a configuration that dropped them.
var torchServeFrontend = []string{"Requests2XX", "Requests4XX", "Requests5XX", "WorkerThreadTime", "WorkerLoadTime", "HandlerTime", "PredictionTime"}

// torchServeFindings says when TorchServe is found but its ts_* metrics are not: a scrape target
// of a TorchServe-named job (or on port 8082) that answers with no samples (log mode), or
// TorchServe's frontend metrics without its request counters. Nothing found is no finding.
func (e *Engine) torchServeFindings(ctx context.Context) ([]setup.Finding, error) {
	ts, err := profile.ByName("torchserve")
	if err != nil {
		return nil, err
	}
	now := e.Clock()
	want := append(append([]string(nil), ts.Signature...), torchServeFrontend...)
	sel := `{__name__=~"` + strings.Join(want, "|") + `"}`
	names, err := e.Prom.LabelValues(ctx, "__name__", []string{sel}, now.Add(-setupLookback), now)
	if err != nil {
		return nil, err
	}
	hasCounters := slices.Contains(names, ts.Signature[0])
	var out []setup.Finding
	if !hasCounters {
		var frontend []string
		for _, n := range torchServeFrontend {
			if slices.Contains(names, n) {
				frontend = append(frontend, n)
			}
		}
		if len(frontend) > 0 {
			out = append(out, setup.Finding{Check: CheckTorchServeMode, Level: setup.Warn, Fix: torchServeModeFix,
				Message: fmt.Sprintf("TorchServe's own metrics are in Prometheus (%s) but not %s: latency, queue time and requests per model cannot be read",
					strings.Join(frontend, ", "), strings.Join(ts.Signature, ", "))})
		}
	}
	empty, err := e.emptyTorchServeTargets(ctx)
	if err != nil {
		return nil, err
	}
	if len(empty) > 0 {
		out = append(out, setup.Finding{Check: CheckTorchServeMode, Level: setup.Warn, Fix: torchServeModeFix,
			Message: fmt.Sprintf("TorchServe scrape targets answer /metrics with no samples (%s): TorchServe's default metrics_mode=log writes its metrics to ts_metrics.log and serves none to Prometheus",
				listText(empty, 5))})
	}
	return out, nil
}

// emptyTorchServeTargets lists "job/instance" of the scrape targets that look like TorchServe
// (the job's name says torchserve, or the target is on the metrics API's port) and whose last
// scrape brought no samples.
func (e *Engine) emptyTorchServeTargets(ctx context.Context) ([]string, error) {
	expr := `scrape_samples_scraped{job=~"(?i).*torch.?serve.*"} == 0 or scrape_samples_scraped{instance=~".*:` + torchServeMetricsPort + `"} == 0`
	res, err := e.Prom.Query(ctx, expr, e.Clock(), 1000)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range res.Samples {
		out = append(out, s.Labels["job"]+"/"+s.Labels["instance"])
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// listText joins the first n items and counts the rest.
func listText(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
