package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/clip"
)

// The query-type registry: every query type is stated once, here and in its own file, with its
// fields, their kinds, defaults and bounds. Parsing reads through these specs, the data source
// dispatches through them, and `go generate` writes the frontend's list and the field tables of
// docs/queries*.md from them (pkg/engine/specgen), so the public contract has one source.

// Kind is how a field's JSON value is read.
type Kind string

// Field kinds.
const (
	KindString   Kind = "string"
	KindBool     Kind = "bool"
	KindNumber   Kind = "number"   // a finite number; numeric strings accepted
	KindInt      Kind = "int"      // a whole number
	KindNumbers  Kind = "numbers"  // a list of numbers (one number is a list of one)
	KindDuration Kind = "duration" // a Prometheus duration ("10m")
	KindChoice   Kind = "choice"   // one of Allowed
	KindChoices  Kind = "choices"  // a string or a list, each one of Allowed
	KindValues   Kind = "values"   // a selection: a string ("|" splits it) or a list of strings
	KindStrings  Kind = "strings"  // a string or a list of strings, never split
)

// FieldSpec is one field of the query JSON.
type FieldSpec struct {
	Name  string
	Label string // the editor's label ("" = not shown in the editor)
	Kind  Kind
	// Default is the value an absent field takes: float64 (number), int, []float64, string
	// (string, choice), bool or time.Duration; nil where absence means something else, which
	// DefaultText then says ("all").
	Default     any
	DefaultText string
	Allowed     []string // choice, choices
	// Min and Max bound a number, int or duration (seconds for a duration) when Max > Min;
	// MinOpen excludes Min itself.
	Min, Max float64
	MinOpen  bool
	// Bounds states a constraint the numbers above cannot (it is checked by the type's parser).
	Bounds string
	Doc    string
}

// TypeSpec is one query type: its name (a public contract, never renamed), what it answers,
// its own fields and how it is parsed.
type TypeSpec struct {
	Name  string
	Title string // the editor's label
	Doc   string // what the series mean, in one sentence
	// Filters are the selection fields that apply (model, version, instance, gpu).
	Filters []string
	Fields  []FieldSpec
	// Profile says whether the type needs the inference server's metric profile.
	Profile ProfileUse
	parse   parseFunc
}

// ProfileUse is how a query type depends on the metric profile.
type ProfileUse int

const (
	// ProfileRequired: the type reads the inference server's metrics.
	ProfileRequired ProfileUse = iota
	// ProfileOptional: the type answers without an inference server (GPU series alone).
	ProfileOptional
	// ProfileUnused: the type never reads the profile (raw PromQL, the probes' snapshots).
	ProfileUnused
)

// parseFunc reads a type's own fields into its Runner.
type parseFunc func(c Common, f Fields) (Runner, error)

// Selection fields, as the specs' Filters name them.
var (
	modelAndInstance = []string{"model", "version", "instance"}
	gpuSelection     = []string{"instance", "gpu"}
)

// registry lists every query type in the editor's order.
var registry = []*TypeSpec{
	&latencySpec, &splitSpec, &jitterSpec, &baselineSpec, &throughputSpec, &errorsSpec,
	&gpuSpec, &gpuMemForecastSpec, &gpuIdleSpec, &gpuLiveSpec, &promqlSpec,
}

// DefaultType is the type of a query that names none (a Prometheus expression, as Grafana's
// Prometheus data source stores it).
const DefaultType = TypePromQL

// Specs returns every query type's spec in the editor's order.
func Specs() []TypeSpec {
	out := make([]TypeSpec, len(registry))
	for i, s := range registry {
		out[i] = *s
	}
	return out
}

// Spec returns a query type's spec.
func Spec(name string) (TypeSpec, bool) {
	for _, s := range registry {
		if s.Name == name {
			return *s, true
		}
	}
	return TypeSpec{}, false
}

// Types lists the query types the engine knows, in name order.
func Types() []string {
	out := make([]string, len(registry))
	for i, s := range registry {
		out[i] = s.Name
	}
	slices.Sort(out)
	return out
}

func lookupType(name string) (parseFunc, bool) {
	s, ok := Spec(name)
	return s.parse, ok
}

// unknownType is the error of a query type the registry does not hold.
func unknownType(name string) error {
	return fmt.Errorf("unknown query type %q: known types are %s", clip.Text(name, 40), strings.Join(Types(), ", "))
}

// The common fields, read for every type (Common). refId and queryType are Grafana's; intervalMs
// and maxDataPoints are read by the caller that builds the Range (RangeHints).
var (
	fieldRefID        = FieldSpec{Name: "refId", Kind: KindString, Doc: "Grafana's query id; frames carry it."}
	fieldQueryType    = FieldSpec{Name: "queryType", Kind: KindString, Default: DefaultType, Doc: "One of the types above. Grafana may also send it outside the JSON; that copy wins."}
	fieldModel        = FieldSpec{Name: "model", Kind: KindValues, DefaultText: "all", Doc: "Models to select (the profile's model label, e.g. `model_name`; Triton: `model`)."}
	fieldVersion      = FieldSpec{Name: "version", Kind: KindValues, DefaultText: "all", Doc: "Versions to select (`model_version`; Triton: `version`). Ignored, with a notice, for servers without a version label (vLLM, TGI)."}
	fieldInstance     = FieldSpec{Name: "instance", Kind: KindValues, DefaultText: "all", Doc: "Scrape targets to select (`instance` unless the settings rename it); the GPU types reduce each to its node."}
	fieldGPU          = FieldSpec{Name: "gpu", Kind: KindValues, DefaultText: "all", Doc: "GPU ids, for the GPU types; the model types ignore it."}
	fieldWarmupFilter = FieldSpec{Name: "warmupFilter", Kind: KindBool, Default: true, Doc: "Drop samples of instances that are not ready or warming up (see below)."}
	fieldRateInterval = FieldSpec{Name: "rateInterval", Kind: KindDuration, DefaultText: formatDuration(defaultRateWindow), Min: 1, Max: 86400,
		Doc: "Window of every `rate()`; never below the step."}
	fieldSeries       = FieldSpec{Name: "series", Kind: KindStrings, DefaultText: "all", Doc: "Keep only the named result series (e.g. `[\"status\"]` for an alert rule)."}
	fieldLegendFormat = FieldSpec{Name: "legendFormat", Kind: KindString, DefaultText: "built-in", Doc: "Series names as in Grafana's Prometheus data source: `{{model_name}} {{series}}`."}
	fieldIntervalMs   = FieldSpec{Name: "intervalMs", Kind: KindNumber, DefaultText: "from Grafana", Min: 0, Max: 1e12, MinOpen: true,
		Doc: "Minimum step in milliseconds, when Grafana does not send it with the request (a value out of bounds is ignored)."}
	fieldMaxDataPoints = FieldSpec{Name: "maxDataPoints", Kind: KindNumber, DefaultText: "from Grafana", Min: 0, Max: 1e9, MinOpen: true,
		Doc: "Point budget of a series, when Grafana does not send it with the request (a value out of bounds is ignored)."}
)

// CommonFields are the fields every query type shares, in the documentation's order.
func CommonFields() []FieldSpec {
	return []FieldSpec{fieldRefID, fieldQueryType, fieldModel, fieldVersion, fieldInstance, fieldGPU, fieldWarmupFilter,
		fieldRateInterval, fieldSeries, fieldLegendFormat, fieldIntervalMs, fieldMaxDataPoints}
}

// RangeHints reads intervalMs and maxDataPoints, which Grafana sends in the query JSON when
// the request does not carry them; a missing or out-of-bounds value is 0 (unset).
func RangeHints(f Fields) (minStep time.Duration, maxPoints int) {
	if v, err := fieldIntervalMs.number(f); err == nil && v > 0 {
		minStep = time.Duration(v) * time.Millisecond
	}
	if v, err := fieldMaxDataPoints.number(f); err == nil && v > 0 {
		maxPoints = int(v)
	}
	return minStep, maxPoints
}

// bounded reports whether the spec states numeric bounds.
func (s FieldSpec) bounded() bool { return s.Max > s.Min }

// number reads a number field with the spec's default and bounds.
func (s FieldSpec) number(f Fields) (float64, error) {
	def, _ := s.Default.(float64)
	x, err := f.Number(s.Name, def)
	if err != nil || !s.bounded() {
		return x, err
	}
	if s.MinOpen && !(x > s.Min && x <= s.Max) {
		return 0, fieldErr(s.Name, "must be above %g and at most %g, got %g", s.Min, s.Max, x)
	}
	if !s.MinOpen && (x < s.Min || x > s.Max) {
		return 0, fieldErr(s.Name, "must be between %g and %g, got %g", s.Min, s.Max, x)
	}
	return x, nil
}

// int reads a whole number with the spec's default and bounds; hi, when positive, lowers the
// upper bound (a bound that depends on another field).
func (s FieldSpec) int(f Fields, def, hi int) (int, error) {
	lo, top := int(s.Min), int(s.Max)
	if hi > 0 {
		top = min(top, hi)
	}
	return f.Int(s.Name, def, lo, top)
}

// defaultInt is the spec's int default.
func (s FieldSpec) defaultInt() int { d, _ := s.Default.(int); return d }

// duration reads a duration with the spec's default and bounds (seconds).
func (s FieldSpec) duration(f Fields) (time.Duration, error) {
	def, _ := s.Default.(time.Duration)
	if !s.bounded() {
		return f.Duration(s.Name, def)
	}
	return f.DurationIn(s.Name, def, seconds(s.Min), seconds(s.Max))
}

// numbers reads a list of numbers with the spec's default.
func (s FieldSpec) numbers(f Fields) ([]float64, error) {
	def, _ := s.Default.([]float64)
	return f.Numbers(s.Name, def)
}

// choice reads one of the allowed values.
func (s FieldSpec) choice(f Fields) (string, error) {
	def, _ := s.Default.(string)
	return f.OneOf(s.Name, def, s.Allowed...)
}

func seconds(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }

// DefaultString writes the default as the documentation and the editor show it.
func (s FieldSpec) DefaultString() string {
	if s.DefaultText != "" {
		return s.DefaultText
	}
	switch d := s.Default.(type) {
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(d, 'g', -1, 64)
	case int:
		return strconv.Itoa(d)
	case bool:
		return strconv.FormatBool(d)
	case string:
		return d
	case time.Duration:
		return formatDuration(d)
	case []float64:
		parts := make([]string, len(d))
		for i, x := range d {
			parts[i] = strconv.FormatFloat(x, 'g', -1, 64)
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprint(s.Default)
}

// TypeString describes the field's JSON type and bounds, as the documentation shows them.
func (s FieldSpec) TypeString() string {
	var t string
	switch s.Kind {
	case KindString:
		t = "string"
	case KindBool:
		t = "bool"
	case KindNumber:
		t = "number"
		if s.bounded() {
			open := "["
			if s.MinOpen {
				open = "("
			}
			t = fmt.Sprintf("number in %s%g, %g]", open, s.Min, s.Max)
		}
	case KindInt:
		t = fmt.Sprintf("whole number %d–%d", int(s.Min), int(s.Max))
	case KindNumbers:
		t = "list of numbers"
	case KindDuration:
		t = "duration"
		if s.bounded() {
			t = fmt.Sprintf("duration, %s–%s", formatDuration(seconds(s.Min)), formatDuration(seconds(s.Max)))
		}
	case KindChoice:
		t = "`" + strings.Join(s.Allowed, "`, `") + "`"
	case KindChoices:
		t = "string or list: `" + strings.Join(s.Allowed, "`, `") + "`"
	case KindValues, KindStrings:
		t = "string or list of strings"
	}
	if s.Bounds != "" {
		t += ", " + s.Bounds
	}
	return t
}

// stringValue reads a string field with the spec's default.
func (s FieldSpec) stringValue(f Fields) (string, error) {
	def, _ := s.Default.(string)
	return f.String(s.Name, def)
}
