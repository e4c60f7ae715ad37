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

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
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
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
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

	baseInst, notes, err := requestsPerInstance(ctx, e, o, o.Baseline, instLabel, rng)
	if err != nil {
		return nil, err
	}
	canInst, notes2, err := requestsPerInstance(ctx, e, o, o.Canary, instLabel, rng)
	if err != nil {
		return nil, err
	}
	var m Measurements
	// Latency, memory and confidence are read on the shared instances (nil: all of them).
	shared := pairInstances(baseInst, canInst, &m)
	latInstances := shared

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
	rd := e.Reader()
	m.BaselineConfidence, m.CanaryConfidence, m.ConfidenceSkip = windowMean(ctx, rd, profile.Confidence, o, latInstances)
	m.BaselineMean, m.CanaryMean, m.MeanSkip = windowMean(ctx, rd, profile.Latency, o, latInstances)
	notes = append(notes, rd.Notices()...)

	r := Decide(o, m)
	slices.Sort(notes)
	r.Notices = slices.Compact(notes)
	return &r, nil
}

// requestsPerInstance counts the requests each instance served of one version in the window.
func requestsPerInstance(ctx context.Context, e *engine.Engine, o Options, version, instLabel string, rng engine.Range) (map[string]float64, []string, error) {
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

// pairInstances returns the instances that served both versions (sorted) and sets m's request
// counts and scope: over those instances, or over all when none serves both.
func pairInstances(baseInst, canInst map[string]float64, m *Measurements) []string {
	var shared []string
	for in, n := range canInst {
		if n > 0 && baseInst[in] > 0 {
			shared = append(shared, in)
		}
	}
	sort.Strings(shared)
	if len(shared) > 0 {
		m.Scope = " on " + strings.Join(shared, ", ") + " (the instances serving both)"
		for _, in := range shared {
			m.BaselineRequests += baseInst[in]
			m.CanaryRequests += canInst[in]
		}
		return shared
	}
	m.Scope = " (no instance serves both versions: all instances compared)"
	for _, n := range baseInst {
		m.BaselineRequests += n
	}
	for _, n := range canInst {
		m.CanaryRequests += n
	}
	return shared
}

// stepFor keeps the latency grid at one minute for the usual windows and at most ~600 points.
func stepFor(w time.Duration) time.Duration {
	return max(time.Minute, (w / 600).Truncate(time.Minute))
}

// run builds and runs one engine query.
func run(ctx context.Context, e *engine.Engine, front engine.Front, rng engine.Range) (*engine.Result, error) {
	q, err := front.Query()
	if err != nil {
		// The kind is ErrOptions: the engine's FieldError names a field of the query built
		// here, not an option the caller set, so errors.As must not find it; it stays text.
		return nil, fmt.Errorf("%w: %v", ErrOptions, err) //nolint:errorlint // see above
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
// on the given instances, through the engine's reader (exact where a quantile would be
// interpolated inside buckets). A profile without the role, or measuring it otherwise, gives
// the reason instead.
func windowMean(ctx context.Context, rd *engine.Reader, role profile.Role, o Options, instances []string) (float64, float64, string) {
	nan := math.NaN()
	means, why := rd.RoleWindowMean(ctx, engine.WindowMeanQuery{Role: role, Model: o.Model, Versions: []string{o.Baseline, o.Canary},
		Instances: instances, Window: o.Window, At: o.At})
	if why != "" {
		return nan, nan, why
	}
	b, c := nan, nan
	if v, ok := means[o.Baseline]; ok {
		b = v
	}
	if v, ok := means[o.Canary]; ok {
		c = v
	}
	if role == profile.Confidence && (math.IsNaN(b) || math.IsNaN(c)) {
		return nan, nan, "no confidence samples for both versions in the window"
	}
	return b, c, ""
}
