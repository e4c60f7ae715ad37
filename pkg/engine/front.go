package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"
)

// The typed front: one struct per query type, for the Go callers of the engine (triage, gate,
// backtest, the command line), so a field is checked by the compiler instead of a map key
// failing at run time. A zero field is absent and takes the registry's default; Query hands the
// fields to the type's parser, so the bounds and the defaults are those of the query JSON.

// Front is a typed query of one type.
type Front interface {
	Query() (Query, error)
}

// Select holds the fields every query type shares (Common).
type Select struct {
	RefID                         string
	Model, Version, Instance, GPU []string
	// KeepWarmup turns the warm-up filter off (the filter is on by default).
	KeepWarmup bool
	// RateInterval is the rate() window (0 = the default, 5m, never below the step).
	RateInterval time.Duration
	// LastInterval reads each counter's last scrape interval (Common.LastInterval).
	LastInterval bool
	Series       []string
	LegendFormat string
}

// Latency is the `latency` type.
type Latency struct {
	Select
	Quantiles []float64
	By        string // ByVersion (default) or ByInstance
}

// Split is the `split` type.
type Split struct {
	Select
	BaselineWindow time.Duration
	By             string
}

// Jitter is the `jitter` type.
type Jitter struct {
	Select
	Threshold float64
	By        string
}

// Baseline is the `baseline` type. For 0 is the default (3m); a hold "at once" is a
// millisecond.
type Baseline struct {
	Select
	Quantile             float64
	Days                 int
	Window               time.Duration
	RatioWarn, RatioCrit float64
	For                  time.Duration
	MinDays              int
	By                   string
}

// Throughput is the `throughput` type; By is total, model (default), version or instance.
type Throughput struct {
	Select
	By string
}

// Errors is the `errors` type.
type Errors struct {
	Select
	By string
}

// GPU is the `gpu` type; no Metrics means all.
type GPU struct {
	Select
	Metrics []GPUMetric
}

// GPUMemForecast is the `gpumem_forecast` type.
type GPUMemForecast struct {
	Select
	Threshold float64
	Window    time.Duration
}

// GPUIdleUnderTraffic is the `gpu_idle_under_traffic` type.
type GPUIdleUnderTraffic struct {
	Select
	IdleFor     time.Duration
	QPSFraction float64
}

// GPULive is the `gpu_live` type.
type GPULive struct{ Select }

// PromQL is the `promql` passthrough.
type PromQL struct {
	Select
	Expr string
}

// Query builds the query (Front).
func (q Latency) Query() (Query, error) {
	return build(&latencySpec, q.Select, "quantiles", q.Quantiles, "by", q.By)
}

// Query builds the query (Front).
func (q Split) Query() (Query, error) {
	return build(&splitSpec, q.Select, "baselineWindow", q.BaselineWindow, "by", q.By)
}

// Query builds the query (Front).
func (q Jitter) Query() (Query, error) {
	return build(&jitterSpec, q.Select, "threshold", q.Threshold, "by", q.By)
}

// Query builds the query (Front).
func (q Baseline) Query() (Query, error) {
	return build(&baselineSpec, q.Select, "quantile", q.Quantile, "days", q.Days, "window", q.Window,
		"ratioWarn", q.RatioWarn, "ratioCrit", q.RatioCrit, "for", q.For, "minDays", q.MinDays, "by", q.By)
}

// Query builds the query (Front).
func (q Throughput) Query() (Query, error) { return build(&throughputSpec, q.Select, "by", q.By) }

// Query builds the query (Front).
func (q Errors) Query() (Query, error) { return build(&errorsSpec, q.Select, "by", q.By) }

// Query builds the query (Front).
func (q GPU) Query() (Query, error) { return build(&gpuSpec, q.Select, "metrics", q.Metrics) }

// Query builds the query (Front).
func (q GPUMemForecast) Query() (Query, error) {
	return build(&gpuMemForecastSpec, q.Select, "threshold", q.Threshold, "window", q.Window)
}

// Query builds the query (Front).
func (q GPUIdleUnderTraffic) Query() (Query, error) {
	return build(&gpuIdleSpec, q.Select, "idleFor", q.IdleFor, "qpsFraction", q.QPSFraction)
}

// Query builds the query (Front).
func (q GPULive) Query() (Query, error) { return build(&gpuLiveSpec, q.Select) }

// Query builds the query (Front).
func (q PromQL) Query() (Query, error) { return build(&promqlSpec, q.Select, "expr", q.Expr) }

// build writes the common fields and the type's own (name, value pairs; zero values are left
// out) as the query JSON's fields and parses them with the type's parser. A name the spec does
// not hold is an error, so the structs above cannot drift from the registry unnoticed (a test
// sets every field of every struct).
func build(spec *TypeSpec, s Select, own ...any) (Query, error) {
	f := Fields{}
	put := func(name string, v any) error {
		rv := reflect.ValueOf(v)
		if !rv.IsValid() || rv.IsZero() || (rv.Kind() == reflect.Slice && rv.Len() == 0) {
			return nil
		}
		if d, ok := v.(time.Duration); ok {
			v = formatDuration(d)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
		f[name] = raw
		return nil
	}
	common := []any{"refId", s.RefID, "model", s.Model, "version", s.Version, "instance", s.Instance, "gpu", s.GPU,
		"rateInterval", s.RateInterval, "series", s.Series, "legendFormat", s.LegendFormat}
	if s.KeepWarmup {
		f[fieldWarmupFilter.Name] = json.RawMessage("false")
	}
	for i := 0; i+1 < len(common); i += 2 {
		if err := put(common[i].(string), common[i+1]); err != nil {
			return Query{}, err
		}
	}
	for i := 0; i+1 < len(own); i += 2 {
		name, _ := own[i].(string)
		if !slices.ContainsFunc(spec.Fields, func(fs FieldSpec) bool { return fs.Name == name }) {
			return Query{}, fmt.Errorf("the %s query type has no field %q", spec.Name, name)
		}
		if err := put(name, own[i+1]); err != nil {
			return Query{}, err
		}
	}
	q, err := ParseFieldsOf(spec.Name, f)
	q.LastInterval = s.LastInterval
	return q, err
}
