// Package profile maps what the engine needs to know (roles such as
// "requests", "queue time" or "load state") to the metric names, label
// names and measurement shapes of one inference server, and detects which
// server a Prometheus holds from the metric names it lists.
//
// The package is pure data and matching: no I/O, no Prometheus client types.
package profile

import (
	"fmt"
	"regexp"
	"sort"
)

// Role is something the engine measures, whatever the server calls it.
type Role string

// Roles. Latency roles are in seconds after Scale.
const (
	Requests     Role = "requests"      // every inference request (rate = QPS)
	Errors       Role = "errors"        // failed requests
	Timeouts     Role = "timeouts"      // requests that timed out
	Latency      Role = "latency"       // end-to-end time in the service
	QueueTime    Role = "queue_time"    // time before execution starts
	ComputeTime  Role = "compute_time"  // execution time
	NetworkTime  Role = "network_time"  // the gateway's upstream time; the network segment is this minus Latency
	QueueDepth   Role = "queue_depth"   // requests waiting now
	Running      Role = "running"       // requests executing now
	Waiting      Role = "waiting"       // requests waiting now (LLM schedulers)
	CacheHits    Role = "cache_hits"    // prefix / response cache hits
	CacheQueries Role = "cache_queries" // prefix / response cache lookups
	KVCacheUsage Role = "kv_cache_usage"
	Preemptions  Role = "preemptions"
	LoadState    Role = "load_state" // 1 ready, 0 loading
	BatchSize    Role = "batch_size"
	InputLength  Role = "input_length"
	TimeToFirst  Role = "time_to_first_token"
	InterToken   Role = "inter_token_latency"
	Confidence   Role = "confidence"
	Fallback     Role = "fallback"
	ProcessStart Role = "process_start" // Unix seconds
	GPUUtil      Role = "gpu_util"      // ratio 0..1 as the server sees it
	// LLM servers split compute into the prompt's prefill and the token-by-token decode.
	PrefillTime Role = "prefill_time" // compute's prefill phase (prompt processing, up to the first token)
	DecodeTime  Role = "decode_time"  // compute's decode phase (first to last token)
	// WaitingDeferred: waiting requests held back by something other than a lack of capacity
	// (vLLM's reason="deferred"); the rest of Waiting waits for capacity (load).
	WaitingDeferred Role = "waiting_deferred"
	Rejections      Role = "rejections"    // requests refused at admission (never queued or counted as finished)
	HTTPErrors      Role = "http_errors"   // HTTP 5xx answers of the inference endpoints
	HTTPRequests    Role = "http_requests" // every HTTP answer of the inference endpoints (HTTPErrors' denominator)
)

// AllRoles lists every role in a stable order; every profile says, for each
// of them, how it is measured or why it is not.
var AllRoles = []Role{
	Requests, Errors, Timeouts, Latency, QueueTime, ComputeTime, NetworkTime,
	QueueDepth, Running, Waiting, CacheHits, CacheQueries, KVCacheUsage, Preemptions,
	LoadState, BatchSize, InputLength, TimeToFirst, InterToken, Confidence, Fallback,
	ProcessStart, GPUUtil, PrefillTime, DecodeTime, WaitingDeferred, Rejections, HTTPErrors, HTTPRequests,
}

// Kind is how a role's series are measured.
type Kind int

// Measurement kinds.
const (
	// Histogram: a classic histogram; Metrics holds base names (series
	// <base>_bucket{le}, <base>_sum, <base>_count).
	Histogram Kind = iota + 1
	// MicrosecondCounter: cumulative duration counters (Metrics, summed,
	// minus Minus) divided by request counters (Count): a mean, never a
	// percentile. Scale turns the unit into seconds.
	MicrosecondCounter
	// Summary: base names with a quantile label (QuantileLabel) plus _sum and
	// _count. Quantiles of different instances cannot be aggregated; with
	// QuantileLabel empty only the mean (sum/count) is available.
	Summary
	// Gauge: a current value.
	Gauge
	// Counter: a cumulative count; the engine uses its rate.
	Counter
	// CounterRatio: rate(Metrics) / rate(Count), e.g. Triton's average batch
	// size = inferences / executions.
	CounterRatio
)

func (k Kind) String() string {
	switch k {
	case Histogram:
		return "histogram"
	case MicrosecondCounter:
		return "microsecond counter"
	case Summary:
		return "summary"
	case Gauge:
		return "gauge"
	case Counter:
		return "counter"
	case CounterRatio:
		return "counter ratio"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Units of a measure after Scale.
const (
	UnitSeconds     = "seconds"
	UnitRatio       = "ratio" // 0..1
	UnitRequests    = "requests"
	UnitTokens      = "tokens"
	UnitElements    = "elements"
	UnitCount       = "count"
	UnitUnixSeconds = "unix seconds"
)

// Measure says how one role is read from Prometheus.
type Measure struct {
	Kind Kind
	// Metrics are the metric names (histogram/summary base names, or sample
	// names) added together for the role.
	Metrics []string
	// Minus are metric names subtracted from Metrics (TorchServe's compute
	// time = inference latency − queue latency).
	Minus []string
	// Count are the request counters a MicrosecondCounter divides by, or the
	// denominator of a CounterRatio (added together).
	Count []string
	// CountMinus are counters subtracted from Count where they exist (an absent one
	// counts as zero, and they are not Required): Triton's compute mean divides by the
	// executed requests, successes − response-cache hits.
	CountMinus []string
	// Matchers are fixed label matchers, e.g. status="error".
	Matchers map[string]string
	// OneOf are fixed set matchers: the label must be one of the values (rendered as an
	// escaped label=~"a|b"), e.g. the HTTP handlers that serve inference. The engine's reads
	// (rates, latencies, readings, warm-up) honour them.
	OneOf map[string][]string
	// QuantileLabel names a Summary's quantile label ("" = sum/count only).
	QuantileLabel string
	// PerInstance: the series carry no model or version label, only the scrape target's (a
	// host-wide counter such as TorchServe's Requests5XX); model and version filters cannot
	// apply to them.
	PerInstance bool
	// Scale turns the raw value into Unit (1e-6 for µs, 0.01 for percent).
	Scale float64
	Unit  string
	// Note is shown next to the data: what the numbers are and are not.
	Note string
}

// Required lists the sample names that must exist for the measure to be
// usable (what Prometheus' list of metric names contains).
func (m Measure) Required() []string {
	var out []string
	for _, name := range m.Metrics {
		switch m.Kind {
		case Histogram:
			out = append(out, name+"_bucket")
		case Summary:
			if m.QuantileLabel != "" {
				out = append(out, name)
			} else {
				out = append(out, name+"_count")
			}
		default:
			out = append(out, name)
		}
	}
	out = append(out, m.Minus...)
	return append(out, m.Count...)
}

// Profile is the naming of one inference server. Copies share the Roles and
// Missing maps: treat them as read-only.
type Profile struct {
	Name  string // settings value: custom, vllm, triton, torchserve, tgi
	Title string // for people
	// Label names identifying model, version and instance; "" when the
	// server has none (see LabelNote).
	ModelLabel, VersionLabel, InstanceLabel string
	LabelNote                               string
	// Roles maps each measurable role to its measures, best first: the
	// first whose Required names exist is used.
	Roles map[Role][]Measure
	// Missing says, for roles the server does not export, why not and what
	// is shown instead.
	Missing map[Role]string
	// Signature lists sample names characteristic of the server, for Detect.
	Signature []string
	// Enable says what the server needs before it serves these metrics at all ("" when it
	// serves them by default): shown where a profile's metrics are missing.
	Enable string
	// Backends are sample names a backend of the server exports with the server's own labels
	// (Triton's vLLM backend serves vllm:* with model and version): a model carrying them under
	// this profile's model label is this server's, and they make no server of another profile.
	Backends []string
	// DeviceLabel is the label that splits a model's per-request series per GPU (Triton's
	// gpu_uuid on GPU instances), "" when there is none. Sums drop it; summary quantiles,
	// which cannot be added, are kept per device and said to be.
	DeviceLabel string
	// LoadTime, when its Kind is set, is a gauge of the seconds a model's last load took
	// (Triton's nv_model_load_duration_secs): warm-up evidence, not a role.
	LoadTime Measure
}

// Measures returns the role's measures, or the notice explaining its absence.
func (p Profile) Measures(r Role) ([]Measure, string) {
	if ms, ok := p.Roles[r]; ok && len(ms) > 0 {
		return ms, ""
	}
	if why, ok := p.Missing[r]; ok {
		return nil, why
	}
	return nil, fmt.Sprintf("the %s profile does not measure %s", p.Name, r)
}

// Resolve picks the first measure of the role whose required names are all
// present. When none is usable it returns false and a notice for people.
func (p Profile) Resolve(r Role, present map[string]bool) (Measure, bool, string) {
	ms, why := p.Measures(r)
	if len(ms) == 0 {
		return Measure{}, false, why
	}
	for _, m := range ms {
		ok := true
		for _, name := range m.Required() {
			if !present[name] {
				ok = false
				break
			}
		}
		if ok {
			return m, true, ""
		}
	}
	return Measure{}, false, fmt.Sprintf("%s: none of the %s metrics for %s were found (%v)", p.Title, p.Name, r, ms[0].Required())
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ValidLabelName reports whether name can be a label name the profiles read (Prometheus' legacy
// label-name rule, which every store accepts).
func ValidLabelName(name string) bool { return labelName.MatchString(name) }

// WithLabels returns a copy of p whose model, version and instance label
// names are replaced by the non-empty arguments (the data source's
// modelLabel / versionLabel / instanceLabel settings). Names must be valid
// Prometheus label names.
func (p Profile) WithLabels(model, version, instance string) (Profile, error) {
	for _, l := range []struct{ what, name string }{{"model", model}, {"version", version}, {"instance", instance}} {
		if l.name != "" && !labelName.MatchString(l.name) {
			return Profile{}, fmt.Errorf("%s label %q is not a valid Prometheus label name", l.what, l.name)
		}
	}
	if model != "" {
		p.ModelLabel = model
	}
	if version != "" {
		p.VersionLabel = version
	}
	if instance != "" {
		p.InstanceLabel = instance
	}
	return p, nil
}

// Names lists the profile names in detection-priority order.
func Names() []string {
	out := make([]string, len(all))
	for i, p := range all {
		out[i] = p.Name
	}
	return out
}

// All returns every built-in profile in detection-priority order.
func All() []Profile {
	out := make([]Profile, len(all))
	copy(out, all)
	return out
}

// ByName returns the named profile ("custom", "vllm", "triton", "torchserve", "tgi").
func ByName(name string) (Profile, error) {
	for _, p := range all {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("unknown metric profile %q (known: %v)", name, Names())
}

// Candidate is one profile's detection score.
type Candidate struct {
	Name    string
	Matched []string // signature names present
	Of      int      // signature size
}

// Fraction is the share of the signature present.
func (c Candidate) Fraction() float64 { return float64(len(c.Matched)) / float64(c.Of) }

// Choose returns the profile a setting names; "auto" or "" detects it from the metric names
// Prometheus has. When nothing is detected the error is a *NotDetectedError.
func Choose(setting string, metricNames []string) (Profile, error) {
	if setting != "" && setting != "auto" {
		return ByName(setting)
	}
	p, det := Detect(metricNames)
	if !det.Found {
		return Profile{}, &NotDetectedError{Reason: det.Reason}
	}
	return p, nil
}

// NotDetectedError says why no profile matched the metric names. Each front end adds where its
// user names a profile (the data source's settings, the command's --profile).
type NotDetectedError struct{ Reason string }

func (e *NotDetectedError) Error() string { return "no metric profile detected: " + e.Reason }

// Detection explains Detect's choice.
type Detection struct {
	Found      bool
	Name       string      // the chosen profile, "" when none
	Ambiguous  bool        // another profile scored exactly as well
	Candidates []Candidate // every profile with a signature match, best first
	Reason     string      // one sentence for the settings page
}

// minMatches is how many signature names a profile needs to count at all:
// one name alone (model_loading_status, say) proves little.
const minMatches = 2

// Detect scores every profile by the share of its signature names present
// in metricNames (sample names, as Prometheus' label values API lists them)
// and returns the best. A profile needs at least two signature names to
// count. Ties on share and count are reported as ambiguous and resolved by
// the fixed priority order (custom, vllm, triton, torchserve, tgi); with no
// candidate at all Found is false and the zero Profile is returned.
func Detect(metricNames []string) (Profile, Detection) {
	present := make(map[string]bool, len(metricNames))
	for _, n := range metricNames {
		present[n] = true
	}
	var cands []Candidate
	order := map[string]int{}
	for i, p := range all {
		order[p.Name] = i
		c := Candidate{Name: p.Name, Of: len(p.Signature)}
		for _, s := range p.Signature {
			if present[s] {
				c.Matched = append(c.Matched, s)
			}
		}
		if len(c.Matched) >= minMatches {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return Profile{}, Detection{Reason: fmt.Sprintf(
			"no known inference-server metrics found among %d metric names (looked for the %v profiles)",
			len(metricNames), Names())}
	}
	better := func(a, b Candidate) bool {
		if a.Fraction() != b.Fraction() {
			return a.Fraction() > b.Fraction()
		}
		return len(a.Matched) > len(b.Matched)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if better(cands[i], cands[j]) || better(cands[j], cands[i]) {
			return better(cands[i], cands[j])
		}
		return order[cands[i].Name] < order[cands[j].Name]
	})
	best := cands[0]
	p, _ := ByName(best.Name)
	d := Detection{Found: true, Name: best.Name, Candidates: cands}
	d.Reason = fmt.Sprintf("%s metrics found (%d of %d characteristic names)", p.Title, len(best.Matched), best.Of)
	if len(cands) > 1 {
		next := cands[1]
		np, _ := ByName(next.Name)
		if !better(best, next) {
			d.Ambiguous = true
			d.Reason = fmt.Sprintf("%s and %s metrics match equally well (%d of %d names each); using %s, set the profile explicitly to choose",
				p.Title, np.Title, len(best.Matched), best.Of, p.Title)
		} else {
			d.Reason += fmt.Sprintf("; %s metrics are present too (%d of %d)", np.Title, len(next.Matched), next.Of)
		}
	}
	return p, d
}
