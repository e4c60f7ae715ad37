package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/clip"
)

// Common holds the fields every query type shares (docs/queries.md documents them).
type Common struct {
	RefID string
	Type  string
	// Model, Version, Instance and GPU select series; empty selects all. Values arrive as a
	// string or a list of strings; a string holding "|" is a multi-value from Grafana's template
	// interpolation and is split on it.
	Model, Version, Instance, GPU []string
	// WarmupFilter drops samples of instances that are not ready or warming up (default true).
	WarmupFilter bool
	// RateInterval overrides the rate() window (default 5m, never below the step).
	RateInterval time.Duration
	// Series keeps only the named result series (default all), e.g. ["ratio"] for an alert rule.
	Series []string
	// LegendFormat names the series like Grafana's Prometheus legend ({{label}}); "" = built-in names.
	LegendFormat string
	// LastInterval takes each counter's rate over its last two samples in the window (irate)
	// instead of the whole window: the triage's reading of a change one scrape interval old,
	// which a window's rate still mixes with the minutes before it. Not a query field: panels
	// and rules keep rate().
	LastInterval bool
}

// Query is a parsed query: the common fields and the type's runner.
type Query struct {
	Common
	runner Runner
}

// Runner returns the type-specific part of the query.
func (q Query) Runner() Runner { return q.runner }

// maxValues bounds the values of one selection field.
const maxValues = 500

// Parse reads a query's JSON: the common fields, then the type's own fields. Unknown fields are
// ignored (Grafana adds its own); a known field with the wrong type or value is an error that
// names the field. A query without a queryType is a PromQL expression (DefaultType).
func Parse(raw []byte) (Query, error) {
	f, err := ParseFields(raw)
	if err != nil {
		return Query{}, err
	}
	qt, err := fieldQueryType.stringValue(f)
	if err != nil {
		return Query{}, err
	}
	return ParseFieldsOf(qt, f)
}

// ParseAs parses raw as a query of the given type (the request's queryType may come outside the
// JSON, as Grafana's DataQuery.QueryType does).
func ParseAs(queryType string, raw []byte) (Query, error) {
	f, err := ParseFields(raw)
	if err != nil {
		return Query{}, err
	}
	return ParseFieldsOf(queryType, f)
}

// ParseFieldsOf parses decoded query fields as a query of the given type, so a caller that
// has already decoded the JSON (the data source reads its range hints from it too) decodes it
// once.
func ParseFieldsOf(queryType string, f Fields) (Query, error) {
	parse, ok := lookupType(queryType)
	if !ok {
		return Query{}, unknownType(queryType)
	}
	c := Common{Type: queryType}
	var err error
	if c.RefID, err = fieldRefID.stringValue(f); err != nil {
		return Query{}, err
	}
	for _, sel := range []struct {
		spec FieldSpec
		dst  *[]string
	}{{fieldModel, &c.Model}, {fieldVersion, &c.Version}, {fieldInstance, &c.Instance}, {fieldGPU, &c.GPU}} {
		if *sel.dst, err = f.Values(sel.spec.Name); err != nil {
			return Query{}, err
		}
	}
	if c.WarmupFilter, err = f.Bool(fieldWarmupFilter.Name, fieldWarmupFilter.Default.(bool)); err != nil {
		return Query{}, err
	}
	// 0 is the default window (defaultRateWindow, never below the step).
	if c.RateInterval, err = f.Duration(fieldRateInterval.Name, 0); err != nil {
		return Query{}, err
	}
	if lo, hi := seconds(fieldRateInterval.Min), seconds(fieldRateInterval.Max); c.RateInterval != 0 && (c.RateInterval < lo || c.RateInterval > hi) {
		return Query{}, fieldErr(fieldRateInterval.Name, "must be between %s and %gh, got %s", formatDuration(lo), hi.Hours(), formatDuration(c.RateInterval))
	}
	if c.Series, err = f.Strings(fieldSeries.Name); err != nil {
		return Query{}, err
	}
	if c.LegendFormat, err = fieldLegendFormat.stringValue(f); err != nil {
		return Query{}, err
	}
	r, err := parse(c, f)
	if err != nil {
		return Query{}, err
	}
	return Query{Common: c, runner: r}, nil
}

// Fields is a query's JSON object, read field by field with clear errors.
type Fields map[string]json.RawMessage

// ParseFields decodes a query's JSON object.
func ParseFields(raw []byte) (Fields, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return Fields{}, nil
	}
	var f Fields
	if err := json.Unmarshal(raw, &f); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("the query JSON is malformed: %s (at byte %d)", syn.Error(), syn.Offset)
		}
		return nil, fmt.Errorf("the query JSON must be an object: %s", snippet(raw))
	}
	if f == nil { // "null"
		return Fields{}, nil
	}
	return f, nil
}

// FieldError is a query field with a wrong type or value.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return "field " + e.Field + " " + e.Msg }

func fieldErr(name, format string, args ...any) error {
	return &FieldError{Field: name, Msg: fmt.Sprintf(format, args...)}
}

// get returns the raw value of a present, non-null field.
func (f Fields) get(name string) (json.RawMessage, bool) {
	v, ok := f[name]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, false
	}
	return v, true
}

// String reads a string field.
func (f Fields) String(name, def string) (string, error) {
	v, ok := f.get(name)
	if !ok {
		return def, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fieldErr(name, "must be a string, got %s", snippet(v))
	}
	return s, nil
}

// Bool reads a boolean field; the strings "true" and "false" are accepted too (template variables).
func (f Fields) Bool(name string, def bool) (bool, error) {
	v, ok := f.get(name)
	if !ok {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err == nil {
		return b, nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if b, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
			return b, nil
		}
	}
	return false, fieldErr(name, "must be true or false, got %s", snippet(v))
}

// Number reads a finite number; numeric strings are accepted too (template variables).
func (f Fields) Number(name string, def float64) (float64, error) {
	v, ok := f.get(name)
	if !ok {
		return def, nil
	}
	x, err := number(v)
	if err != nil {
		return 0, fieldErr(name, "must be a number, got %s", snippet(v))
	}
	return x, nil
}

// NumberIn reads a number and checks lo <= x <= hi.
func (f Fields) NumberIn(name string, def, lo, hi float64) (float64, error) {
	x, err := f.Number(name, def)
	if err != nil {
		return 0, err
	}
	if x < lo || x > hi {
		return 0, fieldErr(name, "must be between %g and %g, got %g", lo, hi, x)
	}
	return x, nil
}

// Int reads a whole number within lo..hi.
func (f Fields) Int(name string, def, lo, hi int) (int, error) {
	x, err := f.Number(name, float64(def))
	if err != nil {
		return 0, err
	}
	if x != math.Trunc(x) || x < float64(lo) || x > float64(hi) {
		return 0, fieldErr(name, "must be a whole number between %d and %d, got %g", lo, hi, x)
	}
	return int(x), nil
}

// Numbers reads a list of numbers (a single number is a list of one).
func (f Fields) Numbers(name string, def []float64) ([]float64, error) {
	v, ok := f.get(name)
	if !ok {
		return def, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		x, err := number(v)
		if err != nil {
			return nil, fieldErr(name, "must be a list of numbers, got %s", snippet(v))
		}
		return []float64{x}, nil
	}
	out := make([]float64, len(list))
	for i, item := range list {
		x, err := number(item)
		if err != nil {
			return nil, fieldErr(fmt.Sprintf("%s[%d]", name, i), "must be a number, got %s", snippet(item))
		}
		out[i] = x
	}
	return out, nil
}

// Duration reads a Prometheus duration ("90s", "10m", "1h30m", "7d").
func (f Fields) Duration(name string, def time.Duration) (time.Duration, error) {
	v, ok := f.get(name)
	if !ok {
		return def, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return 0, fieldErr(name, "must be a duration such as \"10m\", got %s", snippet(v))
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return 0, fieldErr(name, "%s", err.Error())
	}
	return d, nil
}

// DurationIn reads a duration and checks lo <= d <= hi.
func (f Fields) DurationIn(name string, def, lo, hi time.Duration) (time.Duration, error) {
	d, err := f.Duration(name, def)
	if err != nil {
		return 0, err
	}
	if d < lo || d > hi {
		return 0, fieldErr(name, "must be between %s and %s, got %s", formatDuration(lo), formatDuration(hi), formatDuration(d))
	}
	return d, nil
}

// Strings reads a list of strings (a single string is a list of one; it is not split).
func (f Fields) Strings(name string) ([]string, error) {
	v, ok := f.get(name)
	if !ok {
		return nil, nil
	}
	var one string
	if json.Unmarshal(v, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, fieldErr(name, "must be a string or a list of strings, got %s", snippet(v))
	}
	return list, nil
}

// Values reads a selection field: a string or a list of strings. A string containing "|" is
// split on it (Grafana's interpolation of a multi-value variable); list items are taken as they
// are. Empty items are dropped, duplicates removed. (JSON decoding has already made every value
// valid UTF-8.)
func (f Fields) Values(name string) ([]string, error) {
	v, ok := f.get(name)
	if !ok {
		return nil, nil
	}
	var out []string
	var one string
	if json.Unmarshal(v, &one) == nil {
		out = SplitValues(one)
	} else {
		var items []string
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, fieldErr(name, "must be a string or a list of strings, got %s", snippet(v))
		}
		out = distinct(items)
	}
	if len(out) > maxValues {
		return nil, fieldErr(name, "holds %d values, more than the limit of %d", len(out), maxValues)
	}
	return out, nil
}

// SplitValues reads a selection written as one string: "|" separates the values (Grafana's
// multi-value interpolation, the "pipe" format: the values joined, unescaped), and each value
// is a literal name, matched exactly — never a regular expression. Empty values, Grafana's
// "$__all" marker and duplicates are dropped. This is the one reading of "a|b" everywhere: the
// query types, the variables resource, triage, gate and report (which take one value and say
// so when given several: OneValue).
func SplitValues(s string) []string {
	return distinct(strings.Split(s, "|"))
}

func distinct(items []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, it := range items {
		if it == "" || it == "$__all" || seen[it] {
			continue
		}
		seen[it] = true
		out = append(out, it)
	}
	return out
}

// OneValue is the value of a field that names one subject, read as SplitValues reads it; a
// value naming several ("a|b") is an error naming them, so no reading takes "a|b" for a literal
// name or compares two subjects as one.
func OneValue(field, s string) (string, error) {
	vals := SplitValues(strings.TrimSpace(s))
	switch len(vals) {
	case 0:
		return "", nil
	case 1:
		return vals[0], nil
	}
	return "", fmt.Errorf("%s %s names %d values (%s): it takes one (\"|\" separates values)", field, strconv.Quote(clip.Text(s, 80)), len(vals), clip.Text(strings.Join(vals, ", "), 120))
}

// OneOf reads a string field that must be one of the allowed values.
func (f Fields) OneOf(name, def string, allowed ...string) (string, error) {
	s, err := f.String(name, def)
	if err != nil {
		return "", err
	}
	s = strings.TrimSpace(s)
	if s == "" {
		s = def
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", fieldErr(name, "must be one of %s, got %q", strings.Join(allowed, ", "), clip.Text(s, 40))
}

func number(v json.RawMessage) (float64, error) {
	var x float64
	if err := json.Unmarshal(v, &x); err == nil {
		return x, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return 0, err
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("not a finite number")
	}
	return x, nil
}

var durationRE = regexp.MustCompile(`^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$`)

// ParseDuration parses a Prometheus duration: units y (365d), w, d, h, m, s, ms in that order,
// e.g. "1h30m", "7d", "90s".
func ParseDuration(s string) (time.Duration, error) {
	m := durationRE.FindStringSubmatch(s)
	if m == nil || s == "" {
		return 0, fmt.Errorf("%q is not a duration: use a value like \"10m\", \"90s\" or \"1h30m\"", clip.Text(s, 40))
	}
	units := []time.Duration{365 * 24 * time.Hour, 7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second, time.Millisecond}
	var d time.Duration
	for i, u := range units {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil || n > int64(math.MaxInt64/u) || d > math.MaxInt64-time.Duration(n)*u {
			return 0, fmt.Errorf("%q is too long a duration", clip.Text(s, 40))
		}
		d += time.Duration(n) * u
	}
	return d, nil
}

// formatDuration writes d the way Prometheus does ("1h30m", "10m", "1500ms").
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		d = -d
	}
	ms := d.Milliseconds()
	for _, u := range []struct {
		ms   int64
		name string
	}{{7 * 86400000, "w"}, {86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}} {
		if n := ms / u.ms; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			ms -= n * u.ms
		}
	}
	return b.String()
}

func snippet(v []byte) string {
	s := strings.TrimSpace(string(v))
	return clip.Text(s, 60)
}
