package gate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// ErrOptions wraps a wrong question (a missing version, a bad window): the caller's mistake.
var ErrOptions = errors.New("bad gate options")

// Evaluate answers the gate question o on the engine's Prometheus. Traffic and latency come
// from the engine's own query types (warm-up filtered like the dashboards); latency is compared
// on the instances that serve both versions, so hardware differences do not pass for a
// regression. o is completed with the defaults (At = the engine's clock).
func Evaluate(ctx context.Context, e *engine.Engine, o Options) (*Report, error) {
	o = o.WithDefaults(e.Clock())
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	p := e.Profile
	if p.VersionLabel == "" {
		return nil, fmt.Errorf("%w: %s metrics carry no version label, so two versions of a model cannot be told apart", ErrOptions, p.Title)
	}
	instLabel := p.InstanceLabel
	if instLabel == "" {
		instLabel = "instance"
	}
	rng := engine.Range{Start: o.At.Add(-o.Window), End: o.At, MinStep: stepFor(o.Window)}

	// Traffic per instance of each version.
	perInstance := func(version string) (map[string]float64, []string, error) {
		res, err := run(ctx, e, engine.Throughput{Select: engine.Select{Model: []string{o.Model}, Version: []string{version}}, By: "instance"}, rng)
		if err != nil {
			return nil, nil, err
		}
		out := map[string]float64{}
		for _, s := range res.Series {
			// Each point is the mean rate over the step before it: the first point's step lies
			// before the window.
			n := 0.0
			for i, v := range s.V {
				if i > 0 && finite(v) {
					n += v * res.Step.Seconds()
				}
			}
			out[s.Labels[instLabel]] += n
		}
		return out, noticeTexts(res), nil
	}
	baseInst, notes, err := perInstance(o.Baseline)
	if err != nil {
		return nil, err
	}
	canInst, notes2, err := perInstance(o.Canary)
	if err != nil {
		return nil, err
	}
	var shared []string
	var m Measurements
	for in, n := range canInst {
		if n > 0 && baseInst[in] > 0 {
			shared = append(shared, in)
		}
	}
	sort.Strings(shared)
	var latInstances []string
	if len(shared) > 0 {
		latInstances = shared
		m.Scope = " on " + strings.Join(shared, ", ") + " (the instances serving both)"
		for _, in := range shared {
			m.BaselineRequests += baseInst[in]
			m.CanaryRequests += canInst[in]
		}
	} else {
		m.Scope = " (no instance serves both versions: all instances compared)"
		for _, n := range baseInst {
			m.BaselineRequests += n
		}
		for _, n := range canInst {
			m.CanaryRequests += n
		}
	}

	// Latency on the shared instances, both versions in one query so the points pair up.
	q := engine.Latency{Select: engine.Select{Model: []string{o.Model}, Version: []string{o.Baseline, o.Canary}, Instance: latInstances},
		Quantiles: []float64{0.95}}
	res, err := run(ctx, e, q, rng)
	if err != nil {
		return nil, err
	}
	notes = append(append(notes, notes2...), noticeTexts(res)...)
	for _, s := range res.Series {
		switch s.Labels[p.VersionLabel] {
		case o.Baseline:
			m.BaselineLatency, m.LatencyName = s.V, s.Name
		case o.Canary:
			m.CanaryLatency, m.LatencyName = s.V, s.Name
		}
	}

	m.MemorySkip = memorySkip(o, shared)
	m.BaselineMemory, m.CanaryMemory = math.NaN(), math.NaN()
	m.BaselineConfidence, m.CanaryConfidence, m.ConfidenceSkip = windowMean(ctx, e, profile.Confidence, o, instLabel, latInstances)
	m.BaselineMean, m.CanaryMean, m.MeanSkip = windowMean(ctx, e, profile.Latency, o, instLabel, latInstances)

	r := Decide(o, m)
	slices.Sort(notes)
	r.Notices = slices.Compact(notes)
	return &r, nil
}

// stepFor keeps the latency grid at one minute for the usual windows and at most ~600 points.
func stepFor(w time.Duration) time.Duration {
	return max(time.Minute, (w / 600).Truncate(time.Minute))
}

// run builds and runs one engine query.
func run(ctx context.Context, e *engine.Engine, front engine.Front, rng engine.Range) (*engine.Result, error) {
	q, err := front.Query()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	return e.Run(ctx, q, rng)
}

func noticeTexts(res *engine.Result) []string {
	var out []string
	for _, n := range res.Notices {
		out = append(out, n.Text)
	}
	return out
}

// memorySkip says why GPU memory cannot be compared per version. Memory is measured per GPU
// (NVML, dcgm-exporter), not per model version: two versions sharing an instance share its
// GPUs' numbers, and GPUs of different instances hold other models too.
func memorySkip(o Options, shared []string) string {
	if len(shared) > 0 {
		return fmt.Sprintf("GPU memory is measured per GPU, not per version, and %s and %s share %s: the memory cannot be attributed to either",
			o.Baseline, o.Canary, strings.Join(shared, ", "))
	}
	return "GPU memory is measured per GPU, not per version, and the metrics do not say which GPUs each version holds"
}

// windowMean reads the mean of a role's observations for each version over the whole window
// (sum/count of its histogram or summary, or duration/requests of µs counters, scaled to the
// role's unit), on the given instances:
// exact where a quantile would be interpolated inside buckets. A profile without the role, or
// measuring it otherwise, gives the reason instead.
func windowMean(ctx context.Context, e *engine.Engine, role profile.Role, o Options, instLabel string, instances []string) (float64, float64, string) {
	nan := math.NaN()
	m, ok, why := e.Profile.Resolve(role, e.Present)
	if !ok {
		return nan, nan, why
	}
	var names [2]string // numerator and denominator counters
	switch {
	case len(m.Metrics) == 0 || len(m.Minus) > 0:
	case m.Kind == profile.Summary || m.Kind == profile.Histogram:
		names = [2]string{m.Metrics[0] + "_sum", m.Metrics[0] + "_count"}
	case m.Kind == profile.MicrosecondCounter && len(m.Count) > 0:
		names = [2]string{m.Metrics[0], m.Count[0]}
	}
	if names[0] == "" {
		return nan, nan, fmt.Sprintf("%s measures %s as a %s: no window mean is read from it", e.Profile.Title, role, m.Kind)
	}
	scale := m.Scale
	if scale == 0 {
		scale = 1
	}
	ms := []prom.Matcher{prom.Eq(e.Profile.ModelLabel, o.Model), prom.In(e.Profile.VersionLabel, o.Baseline, o.Canary)}
	if len(instances) > 0 {
		ms = append(ms, prom.In(instLabel, instances...))
	}
	for k, v := range m.Matchers {
		ms = append(ms, prom.Eq(k, v))
	}
	if e.Profile.ModelLabel == "" {
		ms = ms[1:]
	}
	win := model.Duration(o.Window).String()
	by := e.Profile.VersionLabel
	var parts [2]string
	for i, name := range names {
		sel, err := prom.Selector(name, ms...)
		if err != nil {
			return nan, nan, err.Error()
		}
		parts[i] = fmt.Sprintf("sum by (%s) (increase(%s[%s]))", by, sel, win)
	}
	res, err := e.Prom.Query(ctx, parts[0]+" / "+parts[1], o.At, 10)
	if err != nil {
		return nan, nan, fmt.Sprintf("the %s query failed: %v", role, err)
	}
	b, c := nan, nan
	for _, s := range res.Samples {
		switch s.Labels[by] {
		case o.Baseline:
			b = s.V * scale
		case o.Canary:
			c = s.V * scale
		}
	}
	if role == profile.Confidence && (math.IsNaN(b) || math.IsNaN(c)) {
		return nan, nan, "no confidence samples for both versions in the window"
	}
	return b, c, ""
}
