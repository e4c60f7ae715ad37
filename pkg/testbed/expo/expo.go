// Package expo is the naming layer of the test bed: it turns what a simulated inference server
// measures (a Source) into metric families named the way one serving stack names them (a
// Profile), and writes them as live exposition text or as OpenMetrics history for promtool.
//
// The package knows nothing of the scenario behind a Source: adding a serving stack's naming
// means adding a Profile, nothing else. Metric and label names come from pkg/profile, the
// engine's own description of each stack, so the synthetic servers and the engine cannot drift
// apart; only names the engine never reads (other label values, companion series) are spelt
// here.
package expo

import (
	"fmt"
	"sort"
	"time"
)

// Source is what a fleet of simulated inference servers measures, as pure functions of time.
// Cumulative values count since the instance's process start (they reset on restart).
type Source interface {
	Instances() []string
	GPUsPerInstance() int
	// Streams lists the model/version pairs an instance serves at some point in time.
	Streams(instance string) []Stream
	Count(st Stream, c Counter, t time.Time) float64
	// Total is the cumulative sum of measure m over the requests counted by c (Requests or
	// RequestsOK): what a server's cumulative duration counter holds.
	Total(st Stream, m Measure, c Counter, t time.Time) float64
	// Histogram returns cumulative counts at each upper bound (+Inf excluded), the observation
	// count and the sum. Bounds may be nil for Count and Sum alone.
	Histogram(st Stream, m Measure, bounds []float64, t time.Time) (cum []float64, count, sum float64)
	// Queued and Running are the stream's requests waiting and executing now.
	Queued(st Stream, t time.Time) float64
	Running(st Stream, t time.Time) float64
	// KVCacheUsage is the share of a model's KV cache in use on the instance (0..1).
	KVCacheUsage(instance, model string, t time.Time) float64
	// Ready is the models' loading status on the instance (all models load together).
	Ready(instance string, t time.Time) bool
	ProcessStart(instance string, t time.Time) time.Time
	GPUUtilRatio(instance string, gpu int, t time.Time) float64
	// GPUUUID is the GPU's NVML UUID, the same one the probe reports.
	GPUUUID(instance string, gpu int) string
	// ModelGPUs lists the GPU ids that serve a model on every instance.
	ModelGPUs(model string) []int
	// Quantile is the q-quantile of measure m over the stream's requests at t (a summary's
	// objective over its sliding window).
	Quantile(st Stream, m Measure, q float64, t time.Time) float64
}

// Stream is one model version served by one instance; it exists from Since on.
type Stream struct {
	Instance, Model, Version string
	Since                    time.Time
}

// Counter selects a cumulative count.
type Counter int

// Request counters: Requests counts all requests, the others partition it (OK + Errors +
// Timeouts = Requests) except Fallbacks, which counts requests served by the fallback path.
// PromptTokens counts input elements (the sum of InputLength), CachedTokens those found in the
// prefix cache, Preemptions the requests a scheduler evicted and re-ran, Batches the executed
// batches (Requests / Batches is the mean batch size). CompileLookups counts the compiled-graph
// cache lookups of a JIT-compiling server (one per executed batch), CompileHits those found.
const (
	Requests Counter = iota
	RequestsOK
	Errors
	Timeouts
	Fallbacks
	PromptTokens
	CachedTokens
	Preemptions
	Batches
	CompileLookups
	CompileHits
	// Rejections counts requests refused at admission (HTTP 503): they are not among Requests,
	// which counts requests that reached the engine. HTTPOK and HTTPServerErrors are the API
	// server's answers: Requests − Errors answered 2xx, Errors + Rejections answered 5xx.
	Rejections
	HTTPOK
	HTTPServerErrors
)

// Measure selects an observed quantity.
type Measure int

// Measures: Latency is the service's end-to-end time (queue + compute), Gateway the gateway's
// upstream time (latency + network); InputLength and Confidence are per request, BatchSize per
// batch. Times are in seconds.
const (
	Latency Measure = iota
	QueueTime
	ComputeTime
	GatewayTime
	InputLength
	BatchSize
	Confidence
	PrefillTime // compute's prefill phase (LLM servers); PrefillTime + DecodeTime = ComputeTime in mean
	DecodeTime  // compute's decode phase
)

// Type is a metric family type.
type Type int

// Family types.
const (
	CounterType Type = iota
	GaugeType
	HistogramType
	SummaryType
)

func (t Type) String() string {
	return [...]string{"counter", "gauge", "histogram", "summary"}[t]
}

// Label is one name/value pair.
type Label struct{ Name, Value string }

// Point is a series' value at an instant.
type Point struct {
	// Absent: the series does not exist at this instant (nothing is written or served).
	Absent  bool
	Value   float64   // counter and gauge
	Buckets []float64 // histogram: cumulative counts per Family.Bounds
	Count   float64   // histogram and summary
	// Quantiles are a summary's values at Family.Objectives.
	Quantiles []float64
	Sum       float64 // histogram and summary
}

// Series is one labelled member of a family.
type Series struct {
	Labels []Label // the server's own labels; instance and job come from the scrape
	Since  time.Time
	At     func(t time.Time) Point
}

// Family is a metric family as scraped. Name is the sample name of the text format (counters
// end in _total); the OpenMetrics writer derives the family name from it.
type Family struct {
	Name   string
	Help   string
	Type   Type
	Bounds []float64 // histogram upper bounds, +Inf implied
	// FormatLe writes a bound as the server's client library does; nil is FormatBound
	// (Python's prometheus_client).
	FormatLe func(float64) string
	// Objectives are a summary's quantiles (none: _sum and _count only).
	Objectives []float64
	Series     []Series
}

// Target is what one scrape target exposes.
type Target struct {
	Instance string
	// Job overrides HistoryOptions.Job for this target's history.
	Job string
	// Labels are target labels the scrape configuration adds (e.g. node), written into the
	// history after instance and job.
	Labels   []Label
	Families []Family
}

// Profile names and shapes the measurements of one serving stack.
type Profile interface {
	Name() string
	Targets(src Source) []Target
}

var (
	profiles  = map[string]Profile{}
	brokenErr = map[string]error{}
)

// register makes a profile available by name; err says why a naming could not be derived from
// its pkg/profile description (Lookup reports it).
func register(p Profile, err error) {
	profiles[p.Name()] = p
	if err != nil {
		brokenErr[p.Name()] = fmt.Errorf("naming %s does not match its metric profile: %w", p.Name(), err)
	}
}

// Lookup returns the named profile, or a fleet naming (FleetNames).
func Lookup(name string) (Profile, error) {
	if err := brokenErr[name]; err != nil {
		return nil, err
	}
	if p, ok := profiles[name]; ok {
		return p, nil
	}
	if p, ok := fleets[name]; ok {
		return p, nil
	}
	if p, ok := variants[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown profile %q (known: %v, the variants %v and the fleets %v)", name, ProfileNames(), VariantNames(), FleetNames())
}

// ProfileNames lists the registered profiles.
func ProfileNames() []string {
	var out []string
	for n := range profiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
