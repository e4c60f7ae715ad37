package triage

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
)

// Health statuses.
const (
	StatusOK       = "ok"
	StatusWarn     = "warn"
	StatusCritical = "critical"
)

// HealthOptions is one health question: a model (and version) over Window ending At.
type HealthOptions struct {
	Model, Version string
	At             time.Time     // zero = the engine's clock
	Window         time.Duration // 0 = DefaultWindow
}

// HealthReading is one signal of a layer, now against its reference, on the instance where it
// is worst.
type HealthReading struct {
	Name     string   `json:"name"`
	Instance string   `json:"instance,omitempty"`
	Version  string   `json:"version,omitempty"`
	Unit     string   `json:"unit"`
	Now      *float64 `json:"now"`
	Before   *float64 `json:"before"`
	// Reference says what Before is: "7-day baseline" or "previous hour".
	Reference string   `json:"reference"`
	Change    *float64 `json:"change"` // now / before − 1
	Status    string   `json:"status"`
	Limit     string   `json:"limit"`
	Note      string   `json:"note,omitempty"`
	rank      float64  // how bad, to pick the worst instance
}

// HealthLayer is one of the four layers.
type HealthLayer struct {
	Layer    string          `json:"layer"`
	Question string          `json:"question"`
	Status   string          `json:"status"`
	Readings []HealthReading `json:"readings"`
}

// HealthReport is the layered health of a model (the report command's JSON).
type HealthReport struct {
	Model   string        `json:"model"`
	Version string        `json:"version"`
	Window  Window        `json:"window"`
	Before  Window        `json:"before"`
	Status  string        `json:"status"`
	Layers  []HealthLayer `json:"layers"`
	Notices []string      `json:"notices"`
	Queries int           `json:"queries"`
}

// options is the triage question behind o, its window ending at At or else at now.
func (o HealthOptions) options(now time.Time) Options {
	if o.At.IsZero() {
		o.At = now
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	return Options{Model: o.Model, Version: o.Version, From: o.At.Add(-o.Window), To: o.At}.WithDefaults(o.At)
}

// Subject is what o names, for engine.CheckSubject.
func (o HealthOptions) Subject() engine.Subject { return o.options(time.Now()).Subject() }

// Validate checks o as Health does, before anything is read.
func (o HealthOptions) Validate() error {
	return o.options(time.Now()).Validate()
}

// Health reads the four layers of a model with the triage's readings and marks each against
// the catalog's thresholds.
func Health(ctx context.Context, e *engine.Engine, o HealthOptions) (*HealthReport, error) {
	to := o.options(e.Clock())
	if err := to.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	rd, err := Read(ctx, e, to)
	if err != nil {
		return nil, err
	}
	h := HealthFrom(rd, DefaultThresholds())
	return &h, nil
}

// HealthFrom marks readings (pure; Health reads them first): each layer's rows of
// healthLayers, each row the worst of its candidates.
func HealthFrom(rd *Readings, th Thresholds) HealthReport {
	h := HealthReport{Model: rd.Model, Version: rd.Version, Window: newWindow(rd.Window.Start, rd.Window.End),
		Before: newWindow(rd.Before.Start, rd.Before.End), Notices: append([]string{}, rd.Notices...), Queries: rd.Queries}
	h.Status = StatusOK
	for _, l := range healthLayers {
		hl := HealthLayer{Layer: l.layer, Question: l.question, Status: StatusOK, Readings: []HealthReading{}}
		for _, row := range l.rows {
			if w, ok := worstReading(row(rd, th)); ok {
				hl.Readings = append(hl.Readings, w)
			}
		}
		for _, r := range hl.Readings {
			if statusRank(r.Status) > statusRank(hl.Status) {
				hl.Status = r.Status
			}
		}
		if statusRank(hl.Status) > statusRank(h.Status) {
			h.Status = hl.Status
		}
		h.Layers = append(h.Layers, hl)
	}
	return h
}

// A healthRow reads the candidates of one row of a layer (one per instance or per subject);
// the row shows the worst of them.
type healthRow func(rd *Readings, th Thresholds) []HealthReading

// healthLayers is the table of the health check: the four layers in order, each with its rows
// in order.
var healthLayers = []struct {
	layer, question string
	rows            []healthRow
}{
	{LayerResource, "is the hardware enough?", []healthRow{
		perInstance(gpuMemoryReading), perInstance(gpuUtilReading), perInstance(idleGPUsReading), perInstance(hardwareReading)}},
	{LayerFramework, "is the inference engine healthy?", []healthRow{
		perInstance(cacheHitReading), perInstance(queueDepthReading), perInstance(preemptionReading), perInstance(warmupReading)}},
	{LayerService, "what quality do users get?", []healthRow{
		perSubject(latencyReading), perSubject(jitterReading), perSubject(failedReading), perSubject(queueShareReading), perInstance(qpsReading)}},
	{LayerBusiness, "is the model drifting?", []healthRow{
		perInstance(confidenceReading), perInstance(fallbackReading), perInstance(inputLengthReading), versionsServing}},
}

// perInstance makes a row of one candidate per instance that has the reading.
func perInstance(read func(rd *Readings, in *Instance, th Thresholds) (HealthReading, bool)) healthRow {
	return func(rd *Readings, th Thresholds) []HealthReading {
		var out []HealthReading
		for i := range rd.Instances {
			if r, ok := read(rd, &rd.Instances[i], th); ok {
				out = append(out, r)
			}
		}
		return out
	}
}

// perSubject makes a row of one candidate per selected subject that has the reading.
func perSubject(read func(s *Subject, th Thresholds) (HealthReading, bool)) healthRow {
	return func(rd *Readings, th Thresholds) []HealthReading {
		var out []HealthReading
		for i := range rd.Subjects {
			if s := &rd.Subjects[i]; selected(rd, *s) {
				if r, ok := read(s, th); ok {
					out = append(out, r)
				}
			}
		}
		return out
	}
}

// worstReading picks the worst candidate (by status, then by rank), noting how many there
// were, with its change against the reference; false when there is none.
func worstReading(cands []HealthReading) (HealthReading, bool) {
	if len(cands) == 0 {
		return HealthReading{}, false
	}
	sort.SliceStable(cands, func(i, j int) bool {
		ri, rj := statusRank(cands[i].Status), statusRank(cands[j].Status)
		if ri != rj {
			return ri > rj
		}
		return cands[i].rank > cands[j].rank
	})
	w := cands[0]
	if len(cands) > 1 {
		w.Note = strings.TrimPrefix(w.Note+fmt.Sprintf("; worst of %d", len(cands)), "; ")
	}
	if w.Before != nil && w.Now != nil && *w.Before > 0 {
		w.Change = num(*w.Now / *w.Before - 1)
	}
	return w, true
}

// markLevel is x's status against its warn and critical limits (NaN: no such limit); above
// false marks values below the limits instead.
func markLevel(x, warn, crit float64, above bool) string {
	if !finite(x) {
		return StatusOK
	}
	if !above {
		x, warn, crit = -x, -warn, -crit
	}
	switch {
	case finite(crit) && x > crit:
		return StatusCritical
	case finite(warn) && x > warn:
		return StatusWarn
	}
	return StatusOK
}

func pctText(x float64) string { return fmt.Sprintf("%g %%", math.Round(x*1000)/10) }

// Resource.

func gpuMemoryReading(_ *Readings, in *Instance, th Thresholds) (HealthReading, bool) {
	if finite(in.KVCache.Now) { // vLLM: GPU memory is pre-allocated, the KV cache is the pressure
		return HealthReading{Name: "KV-cache usage (memory pressure; GPU memory is pre-allocated)", Instance: in.Name, Unit: "percentunit",
			Now: num(in.KVCache.Now), Before: num(in.KVCache.Before), Reference: "previous hour",
			Status: markLevel(in.KVCache.Now, th.KVCacheWarn, th.KVCacheCrit, true), Limit: "warn > " + pctText(th.KVCacheWarn) + ", critical > " + pctText(th.KVCacheCrit),
			Note: fmt.Sprintf("GPU memory used %.1f %% (peak %.1f %%), not judged", in.GPUMem.Now*100, in.GPUMemPeak*100), rank: in.KVCache.Now}, true
	}
	return HealthReading{Name: "GPU memory used (fullest GPU)", Instance: in.Name, Unit: "percentunit",
		Now: num(in.GPUMem.Now), Before: num(in.GPUMem.Before), Reference: "previous hour",
		Status: markLevel(in.GPUMem.Now, th.GPUMemWarn, th.GPUMemCrit, true), Limit: "warn > " + pctText(th.GPUMemWarn) + ", critical > " + pctText(th.GPUMemCrit),
		Note: fmt.Sprintf("peak %.1f %%", in.GPUMemPeak*100), rank: in.GPUMem.Now}, finite(in.GPUMem.Now)
}

func gpuUtilReading(_ *Readings, in *Instance, _ Thresholds) (HealthReading, bool) {
	return HealthReading{Name: "GPU utilisation (lowest GPU)", Instance: in.Name, Unit: "percentunit",
		Now: num(in.GPUUtil.Now), Before: num(in.GPUUtil.Before), Reference: "previous hour", Status: StatusOK,
		Limit: "shown; judged by idle under traffic", rank: -in.GPUUtil.Now}, finite(in.GPUUtil.Now)
}

func idleGPUsReading(_ *Readings, in *Instance, _ Thresholds) (HealthReading, bool) {
	if !finite(in.QPSBaseline) && len(in.IdleGPUs) == 0 {
		return HealthReading{}, false
	}
	st, note := StatusOK, ""
	if len(in.IdleGPUs) > 0 {
		st, note = StatusCritical, "GPU "+strings.Join(in.IdleGPUs, ", ")
	}
	return HealthReading{Name: "GPUs idle under traffic", Instance: in.Name, Unit: "none",
		Now: num(float64(len(in.IdleGPUs))), Before: nil, Reference: "", Status: st, Limit: "critical > 0", Note: note, rank: float64(len(in.IdleGPUs))}, true
}

func hardwareReading(_ *Readings, in *Instance, _ Thresholds) (HealthReading, bool) {
	if !finite(in.XID.Now) && !finite(in.ECCUncorrected.Now) && !in.ThrottleMeasured {
		return HealthReading{}, false
	}
	st := StatusOK
	if in.XID.Now > 0 || len(in.Throttle) > 0 {
		st = StatusWarn
	}
	if in.ECCUncorrected.Now > 0 {
		st = StatusCritical
	}
	return HealthReading{Name: "XID events + uncorrected ECC errors", Instance: in.Name, Unit: "none",
		Now: num(nanSum(in.XID.Now, in.ECCUncorrected.Now)), Before: num(nanSum(in.XID.Before, in.ECCUncorrected.Before)), Reference: "previous hour",
		Status: st, Limit: "warn on XID or hardware throttling, critical on uncorrected ECC", Note: hardwareText(in), rank: nanSum(in.XID.Now, in.ECCUncorrected.Now)}, true
}

// hardwareText says what the hardware readings found and which were not measured: a signal
// the exporter does not export is never shown as 0.
func hardwareText(in *Instance) string {
	count := func(v float64, what string) string {
		if !finite(v) {
			return what + " not measured"
		}
		return fmt.Sprintf("%.0f %s", v, what)
	}
	parts := []string{count(in.XID.Now, "XID"), count(in.ECCUncorrected.Now, "uncorrected ECC")}
	if correctedStorm(in) {
		parts = append(parts, fmt.Sprintf("%.0f corrected ECC (%.0f in the hour before)", in.ECCCorrected.Now, nanZero(in.ECCCorrected.Before)))
	}
	switch {
	case len(in.Throttle) > 0:
		parts = append(parts, "throttled by "+strings.Join(in.Throttle, ", "))
	case in.ThrottleMeasured:
		parts = append(parts, "no hardware throttling")
	default:
		parts = append(parts, "throttling not measured")
	}
	return strings.Join(parts, ", ")
}

// nanSum adds the finite values; NaN when none is.
func nanSum(xs ...float64) float64 {
	sum, any := 0.0, false
	for _, x := range xs {
		if finite(x) {
			sum, any = sum+x, true
		}
	}
	if !any {
		return math.NaN()
	}
	return sum
}

// Framework.

func cacheHitReading(_ *Readings, in *Instance, th Thresholds) (HealthReading, bool) {
	r := ratio(in.CacheHit.Now, in.CacheHit.Before)
	return HealthReading{Name: "cache hit rate", Instance: in.Name, Unit: "percentunit",
		Now: num(in.CacheHit.Now), Before: num(in.CacheHit.Before), Reference: "previous hour",
		Status: markLevel(r, th.CacheDrop, math.NaN(), false), Limit: "warn below " + pctText(th.CacheDrop) + " of the previous hour", rank: -r}, finite(in.CacheHit.Now)
}

func queueDepthReading(_ *Readings, in *Instance, _ Thresholds) (HealthReading, bool) {
	return HealthReading{Name: "queue depth", Instance: in.Name, Unit: "none",
		Now: num(in.QueueDepth.Now), Before: num(in.QueueDepth.Before), Reference: "previous hour", Status: StatusOK,
		Limit: "shown; judged by the queue share", rank: in.QueueDepth.Now}, finite(in.QueueDepth.Now)
}

func preemptionReading(_ *Readings, in *Instance, _ Thresholds) (HealthReading, bool) {
	return HealthReading{Name: "preemptions per request", Instance: in.Name, Unit: "percentunit",
		Now: num(in.Preemption.Now), Before: num(in.Preemption.Before), Reference: "previous hour",
		Status: markLevel(in.Preemption.Now-in.Preemption.Before, 0.005, math.NaN(), true), Limit: "warn when 0.5 points above the previous hour", rank: in.Preemption.Now}, finite(in.Preemption.Now)
}

// warmupReading is there for every instance: the share of the window it spent warming up.
func warmupReading(rd *Readings, in *Instance, _ Thresholds) (HealthReading, bool) {
	f := warmFraction(in.Warmup, rd.Window.Start, rd.Window.End)
	st := StatusOK
	if f > 0 {
		st = StatusWarn
	}
	return HealthReading{Name: "warm-up in the window", Instance: in.Name, Unit: "percentunit", Now: num(f),
		Status: st, Limit: "warn while an instance warms up (recorded, not alerted on)", rank: f}, true
}

// Service.

// latencyReading compares P95 with the 7-day baseline, or with the previous hour without one.
func latencyReading(s *Subject, th Thresholds) (HealthReading, bool) {
	r, ref, before := s.BaselineRatio, "7-day baseline", s.BaselineP95
	if !finite(r) {
		r, ref, before = ratio(s.P95.Now, s.P95.Before), "previous hour", s.P95.Before
	}
	return HealthReading{Name: "P95 latency", Instance: s.Instance, Version: s.Version, Unit: "s",
		Now: num(s.P95.Now), Before: num(before), Reference: ref, Status: markLevel(r, th.LatencyWarn, th.LatencyCrit, true),
		Limit: fmt.Sprintf("warn > %g×, critical > %g× the reference", th.LatencyWarn, th.LatencyCrit), rank: r}, finite(s.P95.Now)
}

func jitterReading(s *Subject, th Thresholds) (HealthReading, bool) {
	return HealthReading{Name: "jitter (P99/P50)", Instance: s.Instance, Version: s.Version, Unit: "none",
		Now: num(s.Jitter.Now), Before: num(s.Jitter.Before), Reference: "previous hour", Status: markLevel(s.Jitter.Now, th.Jitter, math.NaN(), true),
		Limit: fmt.Sprintf("warn > %g", th.Jitter), rank: s.Jitter.Now}, finite(s.Jitter.Now)
}

func failedReading(s *Subject, th Thresholds) (HealthReading, bool) {
	e := s.ErrorRatio.Now + math.Max(0, nanZero(s.TimeoutRatio.Now))
	return HealthReading{Name: "failed requests (errors + timeouts)", Instance: s.Instance, Version: s.Version, Unit: "percentunit",
		Now: num(e), Before: num(s.ErrorRatio.Before + math.Max(0, nanZero(s.TimeoutRatio.Before))), Reference: "previous hour",
		Status: markLevel(e, th.ErrorRatio/5, th.ErrorRatio, true), Limit: "warn > " + pctText(th.ErrorRatio/5) + ", critical > " + pctText(th.ErrorRatio), rank: e}, finite(s.ErrorRatio.Now)
}

func queueShareReading(s *Subject, th Thresholds) (HealthReading, bool) {
	svc := s.ServiceMean()
	sh := ratio(s.Queue.Now, svc.Now)
	return HealthReading{Name: "queue share of service time", Instance: s.Instance, Version: s.Version, Unit: "percentunit",
		Now: num(sh), Before: num(ratio(s.Queue.Before, svc.Before)), Reference: "previous hour", Status: markLevel(sh, th.QueueShare, math.NaN(), true),
		Limit: "warn > " + pctText(th.QueueShare), rank: sh}, finite(sh)
}

// qpsReading compares traffic with the 7-day baseline, or with the previous hour without one.
func qpsReading(_ *Readings, in *Instance, _ Thresholds) (HealthReading, bool) {
	if !finite(in.QPS.Now) {
		return HealthReading{}, false
	}
	ref, before := "7-day baseline", in.QPSBaseline
	if !finite(before) {
		ref, before = "previous hour", in.QPS.Before
	}
	r := ratio(in.QPS.Now, before)
	st := StatusOK
	if r > 2 || r < 0.5 {
		st = StatusWarn
	}
	return HealthReading{Name: "requests per second", Instance: in.Name, Unit: "reqps", Now: num(in.QPS.Now), Before: num(before),
		Reference: ref, Status: st, Limit: "warn above 2× or below 0.5× the reference", rank: math.Abs(math.Log(nanOne(r)))}, true
}

// Business.

func confidenceReading(_ *Readings, in *Instance, _ Thresholds) (HealthReading, bool) {
	r := ratio(in.Confidence.Now, in.Confidence.Before)
	return HealthReading{Name: "mean prediction confidence", Instance: in.Name, Unit: "percentunit",
		Now: num(in.Confidence.Now), Before: num(in.Confidence.Before), Reference: "previous hour", Status: markLevel(r, 0.95, math.NaN(), false),
		Limit: "warn when 5 % below the previous hour", rank: -r}, finite(in.Confidence.Now)
}

func fallbackReading(_ *Readings, in *Instance, _ Thresholds) (HealthReading, bool) {
	return HealthReading{Name: "share answered by the fallback path", Instance: in.Name, Unit: "percentunit",
		Now: num(in.Fallback.Now), Before: num(in.Fallback.Before), Reference: "previous hour", Status: markLevel(in.Fallback.Now, 0.01, 0.1, true),
		Limit: "warn > 1 %, critical > 10 %", rank: in.Fallback.Now}, finite(in.Fallback.Now)
}

func inputLengthReading(_ *Readings, in *Instance, _ Thresholds) (HealthReading, bool) {
	r := ratio(in.InputMean.Now, in.InputMean.Before)
	return HealthReading{Name: "mean input length", Instance: in.Name, Unit: "none",
		Now: num(in.InputMean.Now), Before: num(in.InputMean.Before), Reference: "previous hour", Status: markLevel(r, 1.3, math.NaN(), true),
		Limit: "warn above 1.3× the previous hour", rank: r}, finite(in.InputMean.Now)
}

// versionsServing lists the versions that served traffic in the window (shown, not judged).
func versionsServing(rd *Readings, _ Thresholds) []HealthReading {
	var versions []string
	for _, s := range rd.Subjects {
		if s.Version != "" && s.QPS.Now > 0 {
			versions = appendUnique(versions, s.Version)
		}
	}
	if len(versions) == 0 {
		return nil
	}
	return []HealthReading{{Name: "versions serving", Unit: "none", Now: num(float64(len(versions))),
		Status: StatusOK, Limit: "shown", Note: strings.Join(versions, ", ")}}
}

func statusRank(s string) int {
	switch s {
	case StatusCritical:
		return 2
	case StatusWarn:
		return 1
	}
	return 0
}

func nanZero(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

func nanOne(x float64) float64 {
	if !finite(x) || x <= 0 {
		return 1
	}
	return x
}
