package testbed

import (
	"sort"
	"sync"
	"time"
)

// Scenario is the deterministic model of an inference fleet: every value it reports is a pure
// function of time, so live serving, written history and test assertions agree exactly.
type Scenario struct {
	name      string
	end       time.Time
	days      int
	instances []instanceSpec
	models    []*modelSpec
	incidents []Incident
	streams   []*stream
	// group is the node suffix of a scaled fleet's copy ("" in Default; see Scaled).
	group string
	ext   *corpusExt // a corpus scenario's cases (corpus_scenario.go); nil otherwise

	mu      sync.Mutex
	regimes map[regimeKey]*regime
	keys    sync.Map // boundsID → boundsKey
}

type instanceSpec struct {
	name string
	// starts are the process start times, ascending; the first precedes the history.
	starts []time.Time
}

type modelSpec struct {
	name           string
	stable         string
	canary         string
	canaryInstance string
	// canaryShare is the canary's share of the model's traffic on canaryInstance.
	canaryShare float64
	// canarySince is when the canary was deployed; zero means it runs throughout.
	canarySince time.Time
	// canaryScale multiplies the canary's queue and compute time (1.15 = 15 % slower).
	canaryScale float64
	gpus        []int

	baseQPS    float64 // mean requests/s per instance over a day
	peakHour   float64 // UTC hour of the daily peak
	weekPhase  float64 // radians; phase of the weekly traffic ripple
	dayPhase   float64 // radians; phase of the per-day latency scale
	queue      mixture
	compute    mixture
	network    atoms
	errRatio   float64
	timeout    float64
	fallback   float64
	confidence float64
	batch      atoms
	input      mixture
	memBase    float64 // GPU memory used ratio when serving normally
	cpuCompute mixture // compute time of the CPU fallback path
	cacheHit   float64 // share of input elements found in the prefix cache
}

// Incident is a scripted departure from steady state.
type Incident struct {
	Kind  IncidentKind
	Start time.Time
	// End is exclusive. An incident still going on at the end of the history (the canary) ends
	// 30 days after it, so live serving keeps it.
	End      time.Time
	Instance string
	Model    string // "" = every model on the instance
	Version  string // "" = every version of Model
	GPUs     []int  // GPU ids involved; nil when none in particular
	Summary  string
}

// Active reports whether t lies in [Start, End).
func (i Incident) Active(t time.Time) bool { return !t.Before(i.Start) && t.Before(i.End) }

// IncidentKind names a scripted incident.
type IncidentKind string

// The scripted incidents; see doc.go for their exact shapes.
const (
	QueueSurge      IncidentKind = "queue_surge"
	ComputeSlowdown IncidentKind = "compute_slowdown"
	NetworkJitter   IncidentKind = "network_jitter"
	WarmupRestart   IncidentKind = "warmup_restart"
	CanarySlower    IncidentKind = "canary_slower"
	GPUIdle         IncidentKind = "gpu_idle_under_traffic"
)

// Timing of a restart: the model loads (not ready, no traffic) for LoadDuration, then serves
// with warm-up latency for WarmupDuration.
const (
	LoadDuration   = 60 * time.Second
	WarmupDuration = 2 * time.Minute
)

// memRampDuration is how long GPU memory climbs before a compute slowdown starts.
const memRampDuration = 90 * time.Minute

// DefaultEnd is the fixed end of the history used by TSDB, so test truth is reproducible.
var DefaultEnd = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// DefaultHistoryDays is how many days of history the standard scenario spans.
const DefaultHistoryDays = 8

// Default returns the standard scenario whose history spans end-8d .. end, with its incidents
// in the last day. Times are truncated to the second.
func Default(end time.Time) *Scenario {
	end = end.UTC().Truncate(time.Second)
	s := &Scenario{name: "default", end: end, days: DefaultHistoryDays, regimes: map[regimeKey]*regime{}}
	h := func(d time.Duration) time.Time { return end.Add(-d) }
	const day = 24 * time.Hour

	restart := h(18 * time.Hour)
	s.instances = []instanceSpec{
		{name: "node-a:8000", starts: []time.Time{h(19*day + 6*time.Hour + 13*time.Minute + 7*time.Second)}},
		{name: "node-b:8000", starts: []time.Time{h(12*day + 2*time.Hour + 41*time.Minute + 29*time.Second)}},
		{name: "node-c:8000", starts: []time.Time{h(9*day + 20*time.Hour + 7*time.Minute + 53*time.Second), restart}},
	}
	canaryDeploy := h(4 * time.Hour)
	s.models = []*modelSpec{
		{
			name: "recsys-ranker", stable: "v1.4.0", canary: "v1.5.0",
			canaryInstance: "node-c:8000", canaryShare: 0.25, canarySince: canaryDeploy, canaryScale: 1.15,
			gpus:    []int{0, 1, 2, 3},
			baseQPS: 120, peakHour: 16, weekPhase: 0.7, dayPhase: 0.3,
			queue:    mixture{{1, 0.003, 0.6}},
			compute:  mixture{{1, 0.012, 0.25}},
			network:  atoms{{0.0015, 0.6}, {0.003, 0.3}, {0.008, 0.1}},
			errRatio: 0.001, timeout: 0.0002, fallback: 0.0005, confidence: 0.86,
			batch:      atoms{{1, 0.1}, {2, 0.15}, {4, 0.3}, {8, 0.3}, {16, 0.15}},
			input:      mixture{{1, 180, 0.5}},
			memBase:    0.80,
			cpuCompute: mixture{{1, 0.030, 0.3}},
			cacheHit:   0.35,
		},
		{
			name: "text-embedder", stable: "v2.1.0", canary: "v2.2.0",
			canaryInstance: "node-c:8000", canaryShare: 0.2, canaryScale: 0.98,
			gpus:    []int{4, 5, 6, 7},
			baseQPS: 60, peakHour: 15, weekPhase: 2.1, dayPhase: 1.9,
			queue:    mixture{{1, 0.002, 0.6}},
			compute:  mixture{{1, 0.025, 0.3}},
			network:  atoms{{0.0015, 0.6}, {0.003, 0.3}, {0.008, 0.1}},
			errRatio: 0.0015, timeout: 0.0001, fallback: 0.0003, confidence: 0.91,
			batch:      atoms{{1, 0.2}, {2, 0.2}, {4, 0.3}, {8, 0.2}, {16, 0.1}},
			input:      mixture{{1, 300, 0.8}},
			memBase:    0.55,
			cpuCompute: mixture{{1, 0.045, 0.3}},
			cacheHit:   0.55,
		},
	}
	s.incidents = []Incident{
		{Kind: NetworkJitter, Start: h(22 * time.Hour), End: h(22*time.Hour - 30*time.Minute), Instance: "node-b:8000",
			Summary: "switch firmware adds ~200 ms to 30 % of requests between gateway and node-b; service time unchanged"},
		{Kind: WarmupRestart, Start: restart, End: restart.Add(LoadDuration + WarmupDuration), Instance: "node-c:8000",
			GPUs:    []int{0, 1, 2, 3, 4, 5, 6, 7},
			Summary: "node-c restarts: counters reset, models load for 60 s (not ready), then 2 min of warm-up latency (8x decaying to 1.6x)"},
		{Kind: ComputeSlowdown, Start: h(14 * time.Hour), End: h(14*time.Hour - 40*time.Minute), Instance: "node-b:8000",
			Model: "recsys-ranker", GPUs: []int{0, 1, 2, 3},
			Summary: "GPU memory climbs from 80 % to 92 % over 90 min, then sits at 93-94 % with reallocation: compute ~4x with a slow tail, queue 1.5x"},
		{Kind: GPUIdle, Start: h(11 * time.Hour), End: h(11*time.Hour - 15*time.Minute), Instance: "node-a:8000",
			Model: "text-embedder", GPUs: []int{6},
			Summary: "GPU 6 loses its context: utilisation 0 while traffic is normal and the model is ready; its quarter of requests falls back to the CPU path"},
		{Kind: QueueSurge, Start: h(8 * time.Hour), End: h(8*time.Hour - 30*time.Minute), Instance: "node-a:8000",
			Model: "recsys-ranker", Version: "v1.4.0",
			Summary: "a batch client raises traffic 1.5x and the batching policy lets the queue grow: queue time ~8x with a heavy tail, compute flat"},
		{Kind: CanarySlower, Start: canaryDeploy, End: end.Add(30 * day), Instance: "node-c:8000",
			Model: "recsys-ranker", Version: "v1.5.0",
			Summary: "recsys-ranker v1.5.0 deployed as canary on node-c (25 % of its traffic); queue and compute 15 % slower than v1.4.0"},
	}
	s.buildStreams()
	return s
}

// Name is the scenario's name ("default").
func (s *Scenario) Name() string { return s.name }

// End is the end of the history; Start is End minus the history days.
func (s *Scenario) End() time.Time   { return s.end }
func (s *Scenario) Start() time.Time { return s.end.AddDate(0, 0, -s.days) }

// HistoryDays is the length of the history in days.
func (s *Scenario) HistoryDays() int { return s.days }

// Instances lists the instance labels, e.g. "node-a:8000".
func (s *Scenario) Instances() []string {
	out := make([]string, len(s.instances))
	for i, in := range s.instances {
		out[i] = in.name
	}
	return out
}

// GPUsPerInstance is the number of GPUs on every instance (ids 0..n-1).
func (s *Scenario) GPUsPerInstance() int { return 8 }

// Models lists the model names.
func (s *Scenario) Models() []string {
	out := make([]string, len(s.models))
	for i, m := range s.models {
		out[i] = m.name
	}
	return out
}

// Versions lists a model's versions: stable first, then canary.
func (s *Scenario) Versions(model string) []string {
	if m := s.model(model); m != nil {
		return []string{m.stable, m.canary}
	}
	return nil
}

// StableVersion and CanaryVersion name a model's versions; CanaryInstance is where the canary runs.
func (s *Scenario) StableVersion(model string) string {
	if m := s.model(model); m != nil {
		return m.stable
	}
	return ""
}

func (s *Scenario) CanaryVersion(model string) string {
	if m := s.model(model); m != nil {
		return m.canary
	}
	return ""
}

func (s *Scenario) CanaryInstance(model string) string {
	if m := s.model(model); m != nil {
		return m.canaryInstance
	}
	return ""
}

// ModelGPUs lists the GPU ids that serve a model on every instance.
func (s *Scenario) ModelGPUs(model string) []int {
	if m := s.model(model); m != nil {
		return append([]int(nil), m.gpus...)
	}
	return nil
}

// Incidents lists the scripted incidents in start order.
func (s *Scenario) Incidents() []Incident {
	out := append([]Incident(nil), s.incidents...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	for i := range out {
		out[i].GPUs = append([]int(nil), out[i].GPUs...)
	}
	return out
}

// Incident returns the first incident of a kind.
func (s *Scenario) Incident(kind IncidentKind) (Incident, bool) {
	for _, in := range s.Incidents() {
		if in.Kind == kind {
			return in, true
		}
	}
	return Incident{}, false
}

// ProcessStart is the start time of the instance's process running at t (zero before the first).
func (s *Scenario) ProcessStart(instance string, t time.Time) time.Time {
	in := s.instance(instance)
	if in == nil || (s.ext != nil && s.ext.down(instance, t)) {
		return time.Time{}
	}
	var last time.Time
	for _, st := range in.starts {
		if !st.After(t) {
			last = st
		}
	}
	return last
}

// Ready is model_loading_status: false before the process starts and for LoadDuration after.
func (s *Scenario) Ready(instance string, t time.Time) bool {
	st := s.ProcessStart(instance, t)
	return !st.IsZero() && !t.Before(st.Add(LoadDuration))
}

// WarmupFactor is the latency multiplier of warm-up at t (1 in steady state, 0 while loading).
func (s *Scenario) WarmupFactor(instance string, t time.Time) float64 {
	st := s.ProcessStart(instance, t)
	if st.IsZero() {
		return 0
	}
	return warmupFactor(t.Sub(st))
}

// warmupFactor: 8x in the first 30 s of serving, decaying in 30 s steps to steady state.
func warmupFactor(sinceStart time.Duration) float64 {
	switch {
	case sinceStart < LoadDuration:
		return 0
	case sinceStart < LoadDuration+30*time.Second:
		return 8
	case sinceStart < LoadDuration+60*time.Second:
		return 5
	case sinceStart < LoadDuration+90*time.Second:
		return 3
	case sinceStart < LoadDuration+120*time.Second:
		return 1.6
	}
	return 1
}

func (s *Scenario) model(name string) *modelSpec {
	for _, m := range s.models {
		if m.name == name {
			return m
		}
	}
	return nil
}

func (s *Scenario) instance(name string) *instanceSpec {
	for i := range s.instances {
		if s.instances[i].name == name {
			return &s.instances[i]
		}
	}
	return nil
}

func (s *Scenario) incidentAt(kind IncidentKind, instance, model, version string, t time.Time) (Incident, bool) {
	for _, in := range s.incidents {
		if in.Kind != kind || in.Instance != instance || !in.Active(t) {
			continue
		}
		if in.Model != "" && in.Model != model {
			continue
		}
		if in.Version != "" && version != "" && in.Version != version {
			continue
		}
		return in, true
	}
	return Incident{}, false
}

// DefaultHistoryStep is the spacing of written history samples (see doc.go for the measurement
// behind the choice).
const DefaultHistoryStep = 60 * time.Second
