package gate

import (
	"math"
	"net/url"
	"testing"
	"time"
)

func flat(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestDecide(t *testing.T) {
	o := Options{Model: "m", Baseline: "a", Canary: "b", At: time.Unix(1e9, 0)}.WithDefaults(time.Time{})
	base := Measurements{BaselineRequests: 1e4, CanaryRequests: 1e3, BaselineLatency: flat(20, 0.1), CanaryLatency: flat(20, 0.109),
		BaselineMean: 0.05, CanaryMean: 0.052, BaselineMemory: math.NaN(), CanaryMemory: math.NaN(), MemorySkip: "shared",
		BaselineConfidence: math.NaN(), CanaryConfidence: math.NaN()}
	cases := []struct {
		name string
		edit func(m *Measurements)
		want Verdict
	}{
		{"within limits", func(*Measurements) {}, Pass},
		{"P95 11 % slower", func(m *Measurements) { m.CanaryLatency = flat(20, 0.111) }, Fail},
		{"mean 11 % slower", func(m *Measurements) { m.CanaryMean = 0.0555 }, Fail},
		{"memory 6 % up", func(m *Measurements) { m.MemorySkip, m.BaselineMemory, m.CanaryMemory = "", 100, 106 }, Fail},
		{"memory 4 % up", func(m *Measurements) { m.MemorySkip, m.BaselineMemory, m.CanaryMemory = "", 100, 104 }, Pass},
		{"too few canary requests", func(m *Measurements) { m.CanaryRequests = 499 }, InsufficientData},
		{"too few requests beats a failure", func(m *Measurements) { m.CanaryRequests = 10; m.CanaryMean = 1 }, InsufficientData},
		{"too few paired points", func(m *Measurements) {
			m.CanaryLatency = flat(20, math.NaN())
			copy(m.CanaryLatency, flat(9, 0.1))
		}, InsufficientData},
		{"no mean", func(m *Measurements) { m.CanaryMean = math.NaN() }, InsufficientData},
	}
	for _, c := range cases {
		m := base
		c.edit(&m)
		if r := Decide(o, m); r.Verdict != c.want {
			t.Errorf("%s: verdict %s, want %s (%+v)", c.name, r.Verdict, c.want, r.Checks)
		}
	}
}

func TestOptionsFromQuery(t *testing.T) {
	o, err := OptionsFromQuery(url.Values{"model": {"m"}, "baseline": {"a"}, "canary": {"b"}, "window": {"30m"},
		"at": {"2026-11-23T12:00:00Z"}, "latencyThreshold": {"15%"}, "memoryThreshold": {"0.02"}, "minRequests": {"100"}})
	if err != nil {
		t.Fatal(err)
	}
	o = o.WithDefaults(time.Now())
	if o.Window != 30*time.Minute || o.LatencyThreshold != 0.15 || o.MemoryThreshold != 0.02 || o.MinRequests != 100 || o.MinPoints != DefaultMinPoints ||
		!o.At.Equal(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("%+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []url.Values{
		{"window": {"soon"}}, {"at": {"yesterday"}}, {"latencyThreshold": {"ten"}}, {"minPoints": {"1.5"}},
	} {
		if _, err := OptionsFromQuery(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	for _, bad := range []Options{
		{Baseline: "a", Canary: "b"}, {Model: "m", Baseline: "a", Canary: "a"}, {Model: "m", Baseline: "a", Canary: "b", Window: time.Second},
		{Model: "m", Baseline: "a", Canary: "b", LatencyThreshold: -1},
	} {
		if err := bad.WithDefaults(time.Now()).Validate(); err == nil {
			t.Errorf("%+v valid", bad)
		}
	}
}
