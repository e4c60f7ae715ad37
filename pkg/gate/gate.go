// Package gate is the release gate: it compares a canary version of a model with the current one
// over a window and says pass, fail or insufficient_data. Decide is the pure comparison;
// Evaluate reads the numbers through the engine (the same latency and traffic computations the
// dashboards show) and hands them to Decide.
package gate

import (
	"fmt"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/engine"
)

// Verdict is the gate's answer.
type Verdict string

// Verdicts. Insufficient data is never a pass: a roll-out waits for more traffic.
const (
	Pass             Verdict = "pass"
	Fail             Verdict = "fail"
	InsufficientData Verdict = "insufficient_data"
)

// Check names.
const (
	CheckTraffic     = "traffic"
	CheckLatency     = "latency_p95"
	CheckMeanLatency = "latency_mean"
	CheckMinuteMean  = "latency_minute_mean" // instead of latency_p95 where the metrics have no percentiles
	CheckMemory      = "gpu_memory"
	CheckConfidence  = "confidence"
)

// Defaults: the brief's thresholds and a guard against deciding on a handful of requests.
const (
	DefaultWindow           = 2 * time.Hour
	DefaultLatencyThreshold = 0.10 // canary P95 more than 10 % above the baseline's fails
	DefaultMemoryThreshold  = 0.05 // canary GPU memory more than 5 % above the baseline's fails
	DefaultMinRequests      = 500  // per version in the window
	DefaultMinPoints        = 10   // latency points where both versions have data
	maxWindow               = 7 * 24 * time.Hour
)

// Options is one gate question.
type Options struct {
	Model, Baseline, Canary string
	Window                  time.Duration // ending at At
	At                      time.Time     // zero = now
	LatencyThreshold        float64       // relative increase that fails (0.10 = 10 %)
	MemoryThreshold         float64
	MinRequests             float64
	MinPoints               int
}

// WithDefaults fills zero fields.
func (o Options) WithDefaults(now time.Time) Options {
	for _, f := range []*string{&o.Model, &o.Baseline, &o.Canary} {
		if v, err := engine.OneValue("", *f); err == nil {
			*f = v // "a|" is a; "a|b" stays for Validate to refuse
		}
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.At.IsZero() {
		o.At = now
	}
	if o.LatencyThreshold == 0 {
		o.LatencyThreshold = DefaultLatencyThreshold
	}
	if o.MemoryThreshold == 0 {
		o.MemoryThreshold = DefaultMemoryThreshold
	}
	if o.MinRequests == 0 {
		o.MinRequests = DefaultMinRequests
	}
	if o.MinPoints == 0 {
		o.MinPoints = DefaultMinPoints
	}
	return o
}

// Validate reports the first wrong field, naming it.
func (o Options) Validate() error {
	for _, f := range []struct{ name, v string }{{"model", o.Model}, {"baseline", o.Baseline}, {"canary", o.Canary}} {
		if strings.TrimSpace(f.v) == "" {
			return fmt.Errorf("%s is required", f.name)
		}
		if _, err := engine.OneValue(f.name, f.v); err != nil {
			return fmt.Errorf("%w: the gate compares one canary version of one model with one baseline version", err)
		}
	}
	if o.Baseline == o.Canary {
		return fmt.Errorf("baseline and canary are the same version (%s)", o.Canary)
	}
	if o.Window < time.Minute || o.Window > maxWindow {
		return fmt.Errorf("window must be between 1m and 7d, got %s", o.Window)
	}
	if !(o.LatencyThreshold > 0 && o.LatencyThreshold <= 10) {
		return fmt.Errorf("latencyThreshold must be above 0 and at most 1000%%, got %g", o.LatencyThreshold)
	}
	if !(o.MemoryThreshold > 0 && o.MemoryThreshold <= 10) {
		return fmt.Errorf("memoryThreshold must be above 0 and at most 1000%%, got %g", o.MemoryThreshold)
	}
	if o.MinRequests < 1 || math.IsInf(o.MinRequests, 0) || math.IsNaN(o.MinRequests) {
		return fmt.Errorf("minRequests must be at least 1, got %g", o.MinRequests)
	}
	if o.MinPoints < 1 || o.MinPoints > 10000 {
		return fmt.Errorf("minPoints must be between 1 and 10000, got %d", o.MinPoints)
	}
	return nil
}

// Subject is what o names, for engine.CheckSubject: the model and both versions.
func (o Options) Subject() engine.Subject {
	return engine.Subject{Model: []string{strings.TrimSpace(o.Model)},
		Version: []string{strings.TrimSpace(o.Baseline), strings.TrimSpace(o.Canary)}}
}

// ParseRatio reads a threshold written as a fraction ("0.1") or a percentage ("10%").
func ParseRatio(s string) (float64, error) {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	x, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%q is not a fraction such as 0.1 or a percentage such as 10%%", s)
	}
	if pct {
		x /= 100
	}
	return x, nil
}

// ParseTime reads RFC 3339 or Unix seconds.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil && x >= 0 && x < 1e11 {
		sec, frac := math.Modf(x)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time or Unix seconds", s)
}

// QueryKeys are the parameters OptionsFromQuery reads.
var QueryKeys = []string{"model", "baseline", "canary", "window", "at", "latencyThreshold", "memoryThreshold", "minRequests", "minPoints"}

// OptionsFromQuery reads the resource's parameters: model, baseline, canary, window, at,
// latencyThreshold, memoryThreshold, minRequests, minPoints. Defaults are not applied.
func OptionsFromQuery(v url.Values) (Options, error) {
	o := Options{Model: v.Get("model"), Baseline: v.Get("baseline"), Canary: v.Get("canary")}
	var err error
	if s := v.Get("window"); s != "" {
		if o.Window, err = engine.ParseDuration(s); err != nil {
			return o, fmt.Errorf("window: %w", err)
		}
	}
	if s := v.Get("at"); s != "" {
		if o.At, err = ParseTime(s); err != nil {
			return o, fmt.Errorf("at: %w", err)
		}
	}
	for _, r := range []struct {
		name string
		dst  *float64
	}{{"latencyThreshold", &o.LatencyThreshold}, {"memoryThreshold", &o.MemoryThreshold}} {
		if s := v.Get(r.name); s != "" {
			if *r.dst, err = ParseRatio(s); err != nil {
				return o, fmt.Errorf("%s: %w", r.name, err)
			}
		}
	}
	if s := v.Get("minRequests"); s != "" {
		if o.MinRequests, err = strconv.ParseFloat(s, 64); err != nil {
			return o, fmt.Errorf("minRequests: %q is not a number", s)
		}
	}
	if s := v.Get("minPoints"); s != "" {
		if o.MinPoints, err = strconv.Atoi(s); err != nil {
			return o, fmt.Errorf("minPoints: %q is not a whole number", s)
		}
	}
	return o, nil
}

// Check is one comparison. Baseline, Canary and Change are null when not measured; Passed is
// null for a skipped check (with the reason why) and for an informational one without threshold.
type Check struct {
	Name      string   `json:"name"`
	Unit      string   `json:"unit"`
	Baseline  *float64 `json:"baseline"`
	Canary    *float64 `json:"canary"`
	Change    *float64 `json:"change"` // canary / baseline − 1
	Threshold *float64 `json:"threshold"`
	Passed    *bool    `json:"passed"`
	Reason    string   `json:"reason"`
	// Insufficient marks a check that could not decide for lack of data.
	Insufficient bool `json:"insufficient,omitempty"`
}

// judge records both values and their change and passes the check when the change is within
// its threshold; it says "within" or "above" for the reason. The baseline must be positive.
func (c *Check) judge(baseline, canary float64) string {
	c.Baseline, c.Canary, c.Change = ptr(baseline), ptr(canary), change(baseline, canary)
	ok := *c.Change <= *c.Threshold
	c.Passed = ptr(ok)
	if ok {
		return "within"
	}
	return "above"
}

// Window is the compared time range.
type Window struct {
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Duration string    `json:"duration"`
}

// Report is the gate's answer.
type Report struct {
	Verdict  Verdict  `json:"verdict"`
	Reason   string   `json:"reason"`
	Checks   []Check  `json:"checks"`
	Window   Window   `json:"window"`
	Model    string   `json:"model"`
	Baseline string   `json:"baseline"`
	Canary   string   `json:"canary"`
	Notices  []string `json:"notices,omitempty"`
}

// Measurements are the numbers Decide compares; NaN = not measured.
type Measurements struct {
	BaselineRequests, CanaryRequests float64
	// LatencyName is the statistic compared ("p95", or "mean" for profiles without percentiles).
	LatencyName string
	// BaselineLatency and CanaryLatency are paired points (seconds) on one grid, NaN where a
	// version had no data.
	BaselineLatency, CanaryLatency []float64
	// BaselineMean and CanaryMean are the window's mean latency (seconds, from the exact
	// sum/count of the latency histogram); MeanSkip says why it is absent.
	BaselineMean, CanaryMean float64
	MeanSkip                 string
	// Memory: GPU memory of each version (bytes or ratio); MemorySkip says why it is not compared.
	BaselineMemory, CanaryMemory float64
	MemorySkip                   string
	// Confidence: mean prediction confidence; ConfidenceSkip says why it is absent.
	BaselineConfidence, CanaryConfidence float64
	ConfidenceSkip                       string
	// Scope says which instances were compared (for the reasons).
	Scope string
}

// Decide compares the measurements under the options' thresholds.
func Decide(o Options, m Measurements) Report {
	r := Report{Model: o.Model, Baseline: o.Baseline, Canary: o.Canary,
		Window: Window{Start: o.At.Add(-o.Window).UTC(), End: o.At.UTC(), Duration: model.Duration(o.Window).String()}}
	r.Checks = []Check{trafficCheck(o, m), latencyCheck(o, m), meanLatencyCheck(o, m), memoryCheck(o, m), confidenceCheck(m)}
	// A check that lacks data is Insufficient (and not passed); one judged over its limit is
	// only not passed. Missing data wins: the roll-out waits rather than fails.
	insufficient, failed := false, false
	var names []string
	for _, c := range r.Checks {
		insufficient = insufficient || c.Insufficient
		if c.Passed != nil && !*c.Passed {
			failed = true
			names = append(names, c.Name)
		}
	}
	switch {
	case insufficient:
		r.Verdict = InsufficientData
		r.Reason = "not enough data to decide: the roll-out waits"
	case failed:
		r.Verdict = Fail
		r.Reason = "the canary is worse than allowed on " + strings.Join(names, ", ")
	default:
		r.Verdict = Pass
		r.Reason = "the canary is within every limit"
	}
	return r
}

// trafficCheck is the traffic guard: each version served at least MinRequests.
func trafficCheck(o Options, m Measurements) Check {
	tr := Check{Name: CheckTraffic, Unit: "requests", Baseline: num(m.BaselineRequests), Canary: num(m.CanaryRequests), Threshold: ptr(o.MinRequests)}
	low := []string{}
	for _, v := range []struct {
		name string
		n    float64
	}{{o.Baseline, m.BaselineRequests}, {o.Canary, m.CanaryRequests}} {
		if math.IsNaN(v.n) || v.n < o.MinRequests {
			low = append(low, fmt.Sprintf("%s served %s", v.name, countText(v.n)))
		}
	}
	if len(low) > 0 {
		tr.Passed, tr.Insufficient = ptr(false), true
		tr.Reason = fmt.Sprintf("too little traffic to decide: %s, at least %s requests per version are needed", strings.Join(low, " and "), countText(o.MinRequests))
	} else {
		tr.Passed = ptr(true)
		tr.Reason = fmt.Sprintf("both versions served at least %s requests%s", countText(o.MinRequests), m.Scope)
	}
	return tr
}

// latencyCheck compares the medians of the paired points, so both versions cover the same
// minutes.
func latencyCheck(o Options, m Measurements) Check {
	name := m.LatencyName
	if name == "" {
		name = "p95"
	}
	// Profiles without percentiles give per-minute means; the name keeps them apart from the
	// window mean below.
	checkName := "latency_" + name
	if name == "mean" {
		checkName = CheckMinuteMean
	}
	lc := Check{Name: checkName, Unit: "s", Threshold: ptr(o.LatencyThreshold)}
	var bs, cs []float64
	for i := range min(len(m.BaselineLatency), len(m.CanaryLatency)) {
		b, c := m.BaselineLatency[i], m.CanaryLatency[i]
		if finite(b) && finite(c) && b > 0 {
			bs, cs = append(bs, b), append(cs, c)
		}
	}
	if len(bs) < o.MinPoints {
		lc.Passed, lc.Insufficient = ptr(false), true
		lc.Reason = fmt.Sprintf("only %d points where both versions have %s latency, at least %d are needed", len(bs), name, o.MinPoints)
		return lc
	}
	b, c := median(bs), median(cs)
	verb := lc.judge(b, c)
	lc.Reason = fmt.Sprintf("%s latency %s the baseline's (median of %d paired points: %s vs %s), %s the %s limit",
		strings.ToUpper(name[:1])+name[1:], percentText(*lc.Change), len(bs), msText(c), msText(b), verb, percentText(o.LatencyThreshold))
	return lc
}

// meanLatencyCheck compares the window's mean latency: exact (no bucket interpolation), gated
// by the same limit.
func meanLatencyCheck(o Options, m Measurements) Check {
	ml := Check{Name: CheckMeanLatency, Unit: "s", Threshold: ptr(o.LatencyThreshold)}
	switch {
	case m.MeanSkip != "":
		ml.Reason = "skipped: " + m.MeanSkip
	case !finite(m.BaselineMean) || !finite(m.CanaryMean) || m.BaselineMean <= 0:
		ml.Passed, ml.Insufficient = ptr(false), true
		ml.Reason = "no mean latency for both versions in the window"
	default:
		verb := ml.judge(m.BaselineMean, m.CanaryMean)
		ml.Reason = fmt.Sprintf("Mean latency %s the baseline's (%s vs %s over the window), %s the %s limit",
			percentText(*ml.Change), msText(m.CanaryMean), msText(m.BaselineMean), verb, percentText(o.LatencyThreshold))
	}
	return ml
}

// memoryCheck compares the versions' GPU memory; without a measure for both it is skipped.
func memoryCheck(o Options, m Measurements) Check {
	mc := Check{Name: CheckMemory, Unit: "bytes", Threshold: ptr(o.MemoryThreshold)}
	if m.MemorySkip != "" || !finite(m.BaselineMemory) || !finite(m.CanaryMemory) || m.BaselineMemory <= 0 {
		mc.Reason = "skipped: " + orText(m.MemorySkip, "no GPU memory was measured for both versions")
		return mc
	}
	verb := mc.judge(m.BaselineMemory, m.CanaryMemory)
	mc.Reason = fmt.Sprintf("GPU memory %s the baseline's, %s the %s limit", percentText(*mc.Change), verb, percentText(o.MemoryThreshold))
	return mc
}

// confidenceCheck is shown, not gated (the brief sets no limit on it).
func confidenceCheck(m Measurements) Check {
	cc := Check{Name: CheckConfidence, Unit: "ratio"}
	if m.ConfidenceSkip != "" || !finite(m.BaselineConfidence) || !finite(m.CanaryConfidence) || m.BaselineConfidence <= 0 {
		cc.Reason = "skipped: " + orText(m.ConfidenceSkip, "no confidence was measured for both versions")
		return cc
	}
	cc.Baseline, cc.Canary, cc.Change = ptr(m.BaselineConfidence), ptr(m.CanaryConfidence), change(m.BaselineConfidence, m.CanaryConfidence)
	cc.Reason = fmt.Sprintf("informational: mean confidence %.4g vs %.4g (%s)", m.CanaryConfidence, m.BaselineConfidence, percentText(*cc.Change))
	return cc
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func ptr[T any](v T) *T { return &v }

func num(x float64) *float64 {
	if !finite(x) {
		return nil
	}
	return &x
}

func change(b, c float64) *float64 {
	if !(b > 0) || !finite(c) {
		return nil
	}
	return ptr(c/b - 1)
}

// median of a non-empty slice (sorted copy).
func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func percentText(x float64) string {
	return fmt.Sprintf("%+.1f %%", x*100)
}

func msText(s float64) string { return fmt.Sprintf("%.2f ms", s*1000) }

func countText(n float64) string {
	if math.IsNaN(n) {
		return "no requests"
	}
	return strconv.FormatFloat(math.Round(n), 'f', -1, 64)
}

func orText(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
