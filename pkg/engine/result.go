package engine

import (
	"slices"
	"sort"
	"strings"
	"time"
)

// Units of result series are Grafana's unit ids (UnitSeconds, UnitPercentUnit, UnitReqPS, …,
// declared with the GPU series in gpu.go).

// SeriesLabel is the label every result series carries with its Name, so that series of one
// query stay distinct by labels alone (Grafana alerting requires it).
const SeriesLabel = "series"

// Result is what a query produced.
type Result struct {
	Series  []Series
	Tables  []Table
	Notices []Notice
	// Warmup lists the stretches whose samples the warm-up filter dropped, per instance (and model).
	Warmup []WarmupInterval
	// Queries are the PromQL expressions sent, in the order they were sent.
	Queries []string
	// Step is the step of the output grid.
	Step time.Duration
}

// Series is one derived time series on the output grid.
type Series struct {
	Name        string            // what it holds: "p95", "queue", "ratio" (also Labels[SeriesLabel])
	Labels      map[string]string // model / version / instance labels (profile names) and SeriesLabel
	DisplayName string
	Unit        string
	T           []int64   // Unix ms, ascending
	V           []float64 // NaN = no data
	Thresholds  []Threshold
	Mappings    []ValueMapping
	// Min and Max fix the axis when set (ratios 0..1, status 0..2).
	Min, Max *float64
}

// sortSeries orders series by their sortKey, stably, building each key once (a comparison
// that built both keys cost more than the sort itself on a fleet's GPUs).
func sortSeries(ss []Series) {
	type keyed struct {
		key string
		s   Series
	}
	k := make([]keyed, len(ss))
	for i, s := range ss {
		k[i] = keyed{s.sortKey(), s}
	}
	slices.SortStableFunc(k, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	for i := range k {
		ss[i] = k[i].s
	}
}

func (s Series) sortKey() string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		if k != SeriesLabel {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(s.Labels[k])
		b.WriteByte(0xff)
	}
	b.WriteString(s.Name)
	return b.String()
}

// Severity of a notice or a threshold.
type Severity string

// Severities.
const (
	Info     Severity = "info"
	Warning  Severity = "warning"
	Critical Severity = "critical"
)

// Notice is a message shown next to the data: why a role is missing, what a number is not.
type Notice struct {
	Severity Severity
	Text     string
}

// Threshold is a line to draw (and a colour step) at Value.
type Threshold struct {
	Value    float64
	Severity Severity // warning or critical
}

// ValueMapping names a value of a series (regime, status).
type ValueMapping struct {
	Value float64
	Text  string
	Color string // Grafana colour name; "" = default
}

// WarmupInterval is a stretch of an instance's (and model's) samples dropped as warm-up.
type WarmupInterval struct {
	Instance   string
	Model      string // "" = every model of the instance
	Start, End time.Time
	Reason     string
}

// Table is a non-time-series result (a live snapshot).
type Table struct {
	Name    string
	Columns []Column
}

// Column is one column of a Table. Values holds a typed slice: []string, []float64 (NaN = null),
// []time.Time or []bool.
type Column struct {
	Name   string
	Unit   string
	Values any
}

func ptr(v float64) *float64 { return &v }

// newSeries builds a result series with the name label set.
func newSeries(name, display, unit string, labels map[string]string, t []int64, v []float64) Series {
	l := make(map[string]string, len(labels)+1)
	for k, val := range labels {
		if val != "" {
			l[k] = val
		}
	}
	l[SeriesLabel] = name
	return Series{Name: name, Labels: l, DisplayName: display, Unit: unit, T: t, V: v}
}
