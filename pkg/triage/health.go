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

// Validate checks o as Health does, before anything is read.
func (o HealthOptions) Validate() error {
	return o.options(time.Now()).Validate()
}

// Health reads the four layers of a model with the triage's readings and marks each against
// the catalog's thresholds.
func Health(ctx context.Context, e *engine.Engine, o HealthOptions) (*HealthReport, error) {
	to := o.options(e.Clock())
	if err := to.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	rd, err := Read(ctx, e, to)
	if err != nil {
		return nil, err
	}
	h := HealthFrom(rd, DefaultThresholds())
	return &h, nil
}

// HealthFrom marks readings (pure; Health reads them first).
func HealthFrom(rd *Readings, th Thresholds) HealthReport {
	h := HealthReport{Model: rd.Model, Version: rd.Version, Window: newWindow(rd.Window.Start, rd.Window.End),
		Before: newWindow(rd.Before.Start, rd.Before.End), Notices: append([]string{}, rd.Notices...), Queries: rd.Queries}
	layers := []struct{ layer, question string }{
		{LayerResource, "is the hardware enough?"},
		{LayerFramework, "is the inference engine healthy?"},
		{LayerService, "what quality do users get?"},
		{LayerBusiness, "is the model drifting?"},
	}
	rows := map[string][]HealthReading{}
	add := func(layer string, cands []HealthReading) {
		if len(cands) == 0 {
			return
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
		rows[layer] = append(rows[layer], w)
	}
	mark := func(x, warn, crit float64, above bool) string {
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
	nan := math.NaN()
	pct := func(x float64) string { return fmt.Sprintf("%g %%", math.Round(x*1000)/10) }

	// Resource.
	var mem, util, idle, hw []HealthReading
	for _, in := range rd.Instances {
		if finite(in.GPUMem.Now) {
			mem = append(mem, HealthReading{Name: "GPU memory used (fullest GPU)", Instance: in.Name, Unit: "percentunit",
				Now: num(in.GPUMem.Now), Before: num(in.GPUMem.Before), Reference: "previous hour",
				Status: mark(in.GPUMem.Now, th.GPUMemWarn, th.GPUMemCrit, true), Limit: "warn > " + pct(th.GPUMemWarn) + ", critical > " + pct(th.GPUMemCrit),
				Note: fmt.Sprintf("peak %.1f %%", in.GPUMemPeak*100), rank: in.GPUMem.Now})
		}
		if finite(in.GPUUtil.Now) {
			util = append(util, HealthReading{Name: "GPU utilisation (lowest GPU)", Instance: in.Name, Unit: "percentunit",
				Now: num(in.GPUUtil.Now), Before: num(in.GPUUtil.Before), Reference: "previous hour", Status: StatusOK,
				Limit: "shown; judged by idle under traffic", rank: -in.GPUUtil.Now})
		}
		if finite(in.QPSBaseline) || len(in.IdleGPUs) > 0 {
			st, note := StatusOK, ""
			if len(in.IdleGPUs) > 0 {
				st, note = StatusCritical, "GPU "+strings.Join(in.IdleGPUs, ", ")
			}
			idle = append(idle, HealthReading{Name: "GPUs idle under traffic", Instance: in.Name, Unit: "none",
				Now: num(float64(len(in.IdleGPUs))), Before: nil, Reference: "", Status: st, Limit: "critical > 0", Note: note, rank: float64(len(in.IdleGPUs))})
		}
		if finite(in.XID.Now) {
			st := StatusOK
			if in.XID.Now > 0 || len(in.Throttle) > 0 {
				st = StatusWarn
			}
			if in.ECCUncorrected.Now > 0 {
				st = StatusCritical
			}
			note := "no hardware throttling"
			if len(in.Throttle) > 0 {
				note = "throttled: " + strings.Join(in.Throttle, ", ")
			}
			hw = append(hw, HealthReading{Name: "XID events + uncorrected ECC errors", Instance: in.Name, Unit: "none",
				Now: num(in.XID.Now + in.ECCUncorrected.Now), Before: num(in.XID.Before + in.ECCUncorrected.Before), Reference: "previous hour",
				Status: st, Limit: "warn on XID or hardware throttling, critical on uncorrected ECC", Note: note, rank: in.XID.Now + in.ECCUncorrected.Now})
		}
	}
	add(LayerResource, mem)
	add(LayerResource, util)
	add(LayerResource, idle)
	add(LayerResource, hw)

	// Framework.
	var cache, depth, pre, warm []HealthReading
	for _, in := range rd.Instances {
		if finite(in.CacheHit.Now) {
			r := ratio(in.CacheHit.Now, in.CacheHit.Before)
			cache = append(cache, HealthReading{Name: "cache hit rate", Instance: in.Name, Unit: "percentunit",
				Now: num(in.CacheHit.Now), Before: num(in.CacheHit.Before), Reference: "previous hour",
				Status: mark(r, th.CacheDrop, nan, false), Limit: "warn below " + pct(th.CacheDrop) + " of the previous hour", rank: -r})
		}
		if finite(in.QueueDepth.Now) {
			depth = append(depth, HealthReading{Name: "queue depth", Instance: in.Name, Unit: "none",
				Now: num(in.QueueDepth.Now), Before: num(in.QueueDepth.Before), Reference: "previous hour", Status: StatusOK,
				Limit: "shown; judged by the queue share", rank: in.QueueDepth.Now})
		}
		if finite(in.Preemption.Now) {
			pre = append(pre, HealthReading{Name: "preemptions per request", Instance: in.Name, Unit: "percentunit",
				Now: num(in.Preemption.Now), Before: num(in.Preemption.Before), Reference: "previous hour",
				Status: mark(in.Preemption.Now-in.Preemption.Before, 0.005, nan, true), Limit: "warn when 0.5 points above the previous hour", rank: in.Preemption.Now})
		}
		f := warmFraction(in.Warmup, rd.Window.Start, rd.Window.End)
		st := StatusOK
		if f > 0 {
			st = StatusWarn
		}
		warm = append(warm, HealthReading{Name: "warm-up in the window", Instance: in.Name, Unit: "percentunit", Now: num(f),
			Status: st, Limit: "warn while an instance warms up (recorded, not alerted on)", rank: f})
	}
	add(LayerFramework, cache)
	add(LayerFramework, depth)
	add(LayerFramework, pre)
	add(LayerFramework, warm)

	// Service.
	var lat, jit, errs, qshare, qps []HealthReading
	for _, s := range rd.Subjects {
		if !selected(rd, s) {
			continue
		}
		if finite(s.P95.Now) {
			r, ref, before := s.BaselineRatio, "7-day baseline", s.BaselineP95
			if !finite(r) {
				r, ref, before = ratio(s.P95.Now, s.P95.Before), "previous hour", s.P95.Before
			}
			lat = append(lat, HealthReading{Name: "P95 latency", Instance: s.Instance, Version: s.Version, Unit: "s",
				Now: num(s.P95.Now), Before: num(before), Reference: ref, Status: mark(r, th.LatencyWarn, th.LatencyCrit, true),
				Limit: fmt.Sprintf("warn > %g×, critical > %g× the reference", th.LatencyWarn, th.LatencyCrit), rank: r})
		}
		if finite(s.Jitter.Now) {
			jit = append(jit, HealthReading{Name: "jitter (P99/P50)", Instance: s.Instance, Version: s.Version, Unit: "none",
				Now: num(s.Jitter.Now), Before: num(s.Jitter.Before), Reference: "previous hour", Status: mark(s.Jitter.Now, th.Jitter, nan, true),
				Limit: fmt.Sprintf("warn > %g", th.Jitter), rank: s.Jitter.Now})
		}
		if finite(s.ErrorRatio.Now) {
			e := s.ErrorRatio.Now + math.Max(0, nanZero(s.TimeoutRatio.Now))
			errs = append(errs, HealthReading{Name: "failed requests (errors + timeouts)", Instance: s.Instance, Version: s.Version, Unit: "percentunit",
				Now: num(e), Before: num(s.ErrorRatio.Before + math.Max(0, nanZero(s.TimeoutRatio.Before))), Reference: "previous hour",
				Status: mark(e, th.ErrorRatio/5, th.ErrorRatio, true), Limit: "warn > " + pct(th.ErrorRatio/5) + ", critical > " + pct(th.ErrorRatio), rank: e})
		}
		svc := s.ServiceMean()
		if sh := ratio(s.Queue.Now, svc.Now); finite(sh) {
			qshare = append(qshare, HealthReading{Name: "queue share of service time", Instance: s.Instance, Version: s.Version, Unit: "percentunit",
				Now: num(sh), Before: num(ratio(s.Queue.Before, svc.Before)), Reference: "previous hour", Status: mark(sh, th.QueueShare, nan, true),
				Limit: "warn > " + pct(th.QueueShare), rank: sh})
		}
	}
	for _, in := range rd.Instances {
		if finite(in.QPS.Now) {
			ref, before := "7-day baseline", in.QPSBaseline
			if !finite(before) {
				ref, before = "previous hour", in.QPS.Before
			}
			r := ratio(in.QPS.Now, before)
			st := StatusOK
			if r > 2 || r < 0.5 {
				st = StatusWarn
			}
			qps = append(qps, HealthReading{Name: "requests per second", Instance: in.Name, Unit: "reqps", Now: num(in.QPS.Now), Before: num(before),
				Reference: ref, Status: st, Limit: "warn above 2× or below 0.5× the reference", rank: math.Abs(math.Log(nanOne(r)))})
		}
	}
	add(LayerService, lat)
	add(LayerService, jit)
	add(LayerService, errs)
	add(LayerService, qshare)
	add(LayerService, qps)

	// Business.
	var conf, fb, input []HealthReading
	for _, in := range rd.Instances {
		if finite(in.Confidence.Now) {
			r := ratio(in.Confidence.Now, in.Confidence.Before)
			conf = append(conf, HealthReading{Name: "mean prediction confidence", Instance: in.Name, Unit: "percentunit",
				Now: num(in.Confidence.Now), Before: num(in.Confidence.Before), Reference: "previous hour", Status: mark(r, 0.95, nan, false),
				Limit: "warn when 5 % below the previous hour", rank: -r})
		}
		if finite(in.Fallback.Now) {
			fb = append(fb, HealthReading{Name: "share answered by the fallback path", Instance: in.Name, Unit: "percentunit",
				Now: num(in.Fallback.Now), Before: num(in.Fallback.Before), Reference: "previous hour", Status: mark(in.Fallback.Now, 0.01, 0.1, true),
				Limit: "warn > 1 %, critical > 10 %", rank: in.Fallback.Now})
		}
		if finite(in.InputMean.Now) {
			r := ratio(in.InputMean.Now, in.InputMean.Before)
			input = append(input, HealthReading{Name: "mean input length", Instance: in.Name, Unit: "none",
				Now: num(in.InputMean.Now), Before: num(in.InputMean.Before), Reference: "previous hour", Status: mark(r, 1.3, nan, true),
				Limit: "warn above 1.3× the previous hour", rank: r})
		}
	}
	add(LayerBusiness, conf)
	add(LayerBusiness, fb)
	add(LayerBusiness, input)
	var versions []string
	for _, s := range rd.Subjects {
		if s.Version != "" && s.QPS.Now > 0 {
			versions = appendUnique(versions, s.Version)
		}
	}
	if len(versions) > 0 {
		rows[LayerBusiness] = append(rows[LayerBusiness], HealthReading{Name: "versions serving", Unit: "none", Now: num(float64(len(versions))),
			Status: StatusOK, Limit: "shown", Note: strings.Join(versions, ", ")})
	}

	h.Status = StatusOK
	for _, l := range layers {
		hl := HealthLayer{Layer: l.layer, Question: l.question, Status: StatusOK, Readings: rows[l.layer]}
		if hl.Readings == nil {
			hl.Readings = []HealthReading{}
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
