package engine

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseCommonFields(t *testing.T) {
	q, err := Parse([]byte(`{"refId":"A","queryType":"latency","model":"a|b||a","version":["v|1","v2"],"instance":"node-a:8000",
		"gpu":[],"warmupFilter":"false","rateInterval":"2m","series":"p95","legendFormat":"{{model_name}}","datasource":{"uid":"x"},"hide":false}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Common{RefID: "A", Type: "latency", Model: []string{"a", "b"}, Version: []string{"v|1", "v2"}, Instance: []string{"node-a:8000"},
		WarmupFilter: false, RateInterval: 2 * time.Minute, Series: []string{"p95"}, LegendFormat: "{{model_name}}"}
	if !reflect.DeepEqual(q.Common, want) {
		t.Errorf("common\n got %+v\nwant %+v", q.Common, want)
	}
	if lq, ok := q.Runner().(latencyQuery); !ok || !reflect.DeepEqual(lq.quantiles, DefaultQuantiles) {
		t.Errorf("runner %#v", q.Runner())
	}

	// Defaults: warm-up filter on, everything selected.
	q, err = ParseAs("baseline", []byte(`{"refId":"B"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !q.WarmupFilter || q.Model != nil || q.Type != "baseline" || q.RefID != "B" {
		t.Errorf("defaults %+v", q.Common)
	}
	bq := q.Runner().(baselineQuery)
	if bq.quantile != 0.95 || bq.opt.Days != 7 || bq.opt.Window != 10*time.Minute || bq.opt.P1Ratio != 1.5 || bq.opt.P0Ratio != 3 ||
		bq.opt.For != 3*time.Minute || bq.opt.MinDays != 3 {
		t.Errorf("baseline defaults %+v %+v", bq, bq.opt)
	}
	for _, raw := range []string{``, `null`, `  `} {
		if _, err := ParseAs("throughput", []byte(raw)); err != nil {
			t.Errorf("%q: %v", raw, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ raw, want string }{
		{`{"queryType":"latency"`, "the query JSON is malformed: unexpected end of JSON input"},
		{`[1,2]`, "the query JSON must be an object: [1,2]"},
		{`"latency"`, `the query JSON must be an object: "latency"`},
		{`{"queryType":"nope"}`, `unknown query type "nope": known types are `},
		{`{"queryType":7}`, "field queryType must be a string, got 7"},
		{`{"queryType":"latency","model":5}`, "field model must be a string or a list of strings, got 5"},
		{`{"queryType":"latency","model":["a",1]}`, `field model must be a string or a list of strings, got ["a",1]`},
		{`{"queryType":"latency","warmupFilter":"sometimes"}`, `field warmupFilter must be true or false, got "sometimes"`},
		{`{"queryType":"latency","rateInterval":"5 minutes"}`, `field rateInterval "5 minutes" is not a duration`},
		{`{"queryType":"latency","rateInterval":"100ms"}`, "field rateInterval must be between 1s and 24h, got 100ms"},
		{`{"queryType":"latency","quantiles":[0.5,1.5]}`, "field quantiles[1] must be above 0 and at most 1, got 1.5"},
		{`{"queryType":"latency","quantiles":["x"]}`, `field quantiles[0] must be a number, got "x"`},
		{`{"queryType":"latency","quantiles":{"a":1}}`, `field quantiles must be a list of numbers, got {"a":1}`},
		{`{"queryType":"latency","quantiles":[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,0.95,0.99]}`, "field quantiles holds 11 values, more than 10"},
		{`{"queryType":"jitter","threshold":1}`, "field threshold must be above 1 and at most 1000, got 1"},
		{`{"queryType":"jitter","threshold":"five"}`, `field threshold must be a number, got "five"`},
		{`{"queryType":"baseline","days":0}`, "field days must be a whole number between 1 and 28, got 0"},
		{`{"queryType":"baseline","days":2.5}`, "field days must be a whole number between 1 and 28, got 2.5"},
		{`{"queryType":"baseline","window":"13h"}`, "field window must be between 1m and 6h, got 13h"},
		{`{"queryType":"baseline","quantile":0}`, "field quantile must be above 0 and at most 1, got 0"},
		{`{"queryType":"baseline","ratioWarn":2,"ratioCrit":1.8}`, "field ratioCrit must be at least ratioWarn"},
		{`{"queryType":"baseline","days":3,"minDays":4}`, "field minDays must be a whole number between 1 and 3, got 4"},
		{`{"queryType":"baseline","for":"-1m"}`, `field for "-1m" is not a duration`},
		{`{"queryType":"throughput","by":"gpu"}`, `field by must be one of total, model, version, instance, got "gpu"`},
		{`{"queryType":"split","baselineWindow":"10s"}`, "field baselineWindow must be between 1m and 1d, got 10s"},
		{`{"queryType":"latency","series":[1]}`, "field series must be a string or a list of strings, got [1]"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.raw))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s…", c.raw, err, c.want)
		}
	}
	var fe *FieldError
	if _, err := Parse([]byte(`{"queryType":"latency","quantiles":[2]}`)); !errors.As(err, &fe) || fe.Field != "quantiles[0]" {
		t.Errorf("want a *FieldError naming quantiles[0], got %#v", err)
	}
	var names []string
	for i := range 501 {
		names = append(names, fmt.Sprint("m", i))
	}
	many := `{"queryType":"latency","model":"` + strings.Join(names, "|") + `"}`
	if _, err := Parse([]byte(many)); err == nil || !strings.Contains(err.Error(), "more than the limit of 500") {
		t.Errorf("501 models: %v", err)
	}
}

func TestValues(t *testing.T) {
	cases := []struct {
		raw  string
		want []string
	}{
		{`"a"`, []string{"a"}},
		{`""`, nil},
		{`null`, nil},
		{`"a|b|a"`, []string{"a", "b"}},
		{`"|a||"`, []string{"a"}},
		{`["a|b","c",""]`, []string{"a|b", "c"}}, // list items are exact values
		{`[]`, nil},
		{`"we\"ird\\name"`, []string{`we"ird\name`}},
	}
	for _, c := range cases {
		got, err := Fields{"model": []byte(c.raw)}.Values("model")
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %q %v, want %q", c.raw, got, err, c.want)
		}
	}
}

func TestDurations(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"90s": 90 * time.Second, "10m": 10 * time.Minute, "1h30m": 90 * time.Minute, "7d": 7 * day, "1w": 7 * day,
		"1y": 365 * day, "1500ms": 1500 * time.Millisecond, "0s": 0, "2h0m5s": 2*time.Hour + 5*time.Second,
	} {
		got, err := ParseDuration(s)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v %v, want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "5", "m", "1.5h", "-1m", "5m3h", "1 m", "99999999999999999999y"} {
		if _, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) accepted", s)
		}
	}
	for d, want := range map[time.Duration]string{
		0: "0s", 90 * time.Second: "1m30s", 5 * time.Minute: "5m", 24 * time.Hour: "1d", 7 * day: "1w", 8 * day: "1w1d", 1500 * time.Millisecond: "1s500ms",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := ParseDuration(formatDuration(d)); err != nil || back != d {
			t.Errorf("round trip of %v: %v %v", d, back, err)
		}
	}
}

func TestQuantileName(t *testing.T) {
	for q, want := range map[float64]string{0: "mean", 0.5: "p50", 0.95: "p95", 0.99: "p99", 0.999: "p99.9", 0.9999: "p99.99", 1: "p100"} {
		if got := quantileName(q); got != want {
			t.Errorf("quantileName(%g) = %q, want %q", q, got, want)
		}
	}
}

func TestGridLimits(t *testing.T) {
	start := time.Date(2026, 11, 20, 0, 0, 7, 0, time.UTC)
	cases := []struct {
		r    Range
		want string
	}{
		{Range{Start: start, End: start.Add(40 * day)}, "the time range (5w5d) is longer than the limit of 4w3d: choose a shorter range"},
		{Range{Start: start, End: start.Add(-time.Hour)}, "the time range ends (2026-11-19T23:00:07Z) before it starts (2026-11-20T00:00:07Z)"},
		{Range{End: start}, "the query has no time range"},
	}
	for _, c := range cases {
		_, err := newGrid(c.r, DefaultLimits)
		if err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.r, err, c.want)
		}
	}
	// 31 days at a 1 s interval: the step is raised to keep every series within the point limit,
	// padding included, and the grid is aligned to the step.
	g, err := newGrid(Range{Start: start, End: start.Add(31 * day), MinStep: time.Second}, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	points := (g.end-g.start)/g.step.Milliseconds() + 1
	if points > prometheusMaxPoints-padReserve || points < prometheusMaxPoints-padReserve-20 || g.start%g.step.Milliseconds() != 0 || g.step%time.Second != 0 {
		t.Errorf("31 days: step %v, %d points, start %d", g.step, points, g.start)
	}
	if padded := (g.end-g.from(time.Hour))/g.step.Milliseconds() + 1; padded > prometheusMaxPoints {
		t.Errorf("padded fetch of %d points", padded)
	}
	// maxDataPoints coarsens the step.
	g, _ = newGrid(Range{Start: start, End: start.Add(time.Hour), MinStep: time.Second, MaxPoints: 100}, DefaultLimits)
	if g.step != 36*time.Second {
		t.Errorf("maxDataPoints 100 over 1h: step %v", g.step)
	}
}

// TestGridAlignEnd: a grid aligned to its end has its last point at the end (to the second) and
// whole steps before it back to the start or just before it; the default grid ends at the last
// multiple of the step, 45 seconds earlier here.
func TestGridAlignEnd(t *testing.T) {
	from := time.Date(2026, 11, 21, 16, 0, 0, 0, time.UTC)
	to := from.Add(15*time.Minute + 15*time.Second + 300*time.Millisecond)
	g, err := newGrid(Range{Start: from, End: to, MinStep: time.Minute, AlignEnd: true}, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	out := g.out()
	last, first := time.UnixMilli(out[len(out)-1]).UTC(), time.UnixMilli(out[0]).UTC()
	if !last.Equal(to.Truncate(time.Second)) || !first.Equal(from.Add(-45*time.Second)) || len(out) != 17 || g.step != time.Minute {
		t.Errorf("aligned to its end: %s … %s, %d points at %s", first, last, len(out), g.step)
	}
	g, _ = newGrid(Range{Start: from, End: to, MinStep: time.Minute}, DefaultLimits)
	if last := time.UnixMilli(g.end).UTC(); !last.Equal(from.Add(15 * time.Minute)) {
		t.Errorf("aligned to the step: ends %s", last)
	}
}
