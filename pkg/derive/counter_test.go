package derive

import (
	"reflect"
	"testing"
	"time"
)

func TestCounterResets(t *testing.T) {
	ts := grid(0, 15_000, 8)
	got := CounterResets(series(ts, 1, 2, 3, 1, 2, nan, 0.5, 0.5))
	if want := []int64{ts[3], ts[6]}; !reflect.DeepEqual(got, want) {
		t.Errorf("resets = %v, want %v", got, want)
	}
	if got := CounterResets(Series{}); got != nil {
		t.Errorf("empty = %v", got)
	}
}

func TestRate(t *testing.T) {
	s := func(v ...float64) Series { return series(grid(0, 15_000, len(v)), v...) }
	tests := []struct {
		name    string
		counter Series
		at      int64
		rng     time.Duration
		want    float64
	}{
		// Samples exactly on both range ends: no extrapolation.
		{"steady", s(0, 15, 30, 45, 60), 60_000, time.Minute, 1},
		// 10 → 40, reset, 5 → 20: increase 20 − 10 + 40 = 50.
		{"reset", s(10, 25, 40, 5, 20), 60_000, time.Minute, 50.0 / 60},
		// Range [10 s, 70 s]: samples 15..60 s; 5 s to the start and 10 s
		// to the end are both within 1.1 × 15 s, so 45 × 60/45.
		{"extrapolate both ends", s(0, 15, 30, 45, 60), 70_000, time.Minute, 1},
		// Range [40 s, 100 s]: samples 45, 60; 40 s to the end is far, so
		// only half an interval (7.5 s) is added: 15 × 27.5/15 / 60.
		{"far end", s(0, 15, 30, 45, 60), 100_000, time.Minute, 27.5 / 60},
		// Range [−30 s, 60 s]: the counter would reach zero 1 s before the
		// first sample, so extrapolation stops there: 60 × 61/60 / 90.
		{"zero point limits extrapolation", s(1, 16, 31, 46, 61), 60_000, 90 * time.Second, 61.0 / 90},
		{"one sample is not enough", s(0, 15, 30), 75_000, 30 * time.Second, nan},
		{"NaN samples are skipped", s(0, nan, 30, nan, 60), 60_000, time.Minute, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Rate(tc.counter, []int64{tc.at}, tc.rng)
			if err != nil {
				t.Fatal(err)
			}
			if !same(got.V[0], tc.want, 1e-12) {
				t.Errorf("rate = %v, want %v", got.V[0], tc.want)
			}
		})
	}
	inc, err := Increase(s(0, 15, 30, 45, 60), []int64{100_000}, time.Minute)
	if err != nil || !same(inc.V[0], 27.5, 1e-12) {
		t.Errorf("increase = %v, %v; want 27.5", inc.V, err)
	}
	if _, err := Rate(s(1, 2), []int64{0}, 0); err == nil {
		t.Error("want an error for a zero range")
	}
	if _, err := Rate(Series{T: []int64{2, 1}, V: []float64{1, 2}}, nil, time.Minute); err == nil {
		t.Error("want an error for unsorted samples")
	}
}

func TestRateSlidesOverManyPoints(t *testing.T) {
	// A counter growing 2/s that restarts every 10 minutes, its first
	// sample after a restart already holding the 30 counts since: with
	// samples on both range ends the rate is exactly 2 everywhere.
	ts := grid(0, 15_000, 400)
	v := make([]float64, len(ts))
	for i, t := range ts {
		v[i] = float64(t%600_000)/500 + 30
	}
	out := grid(120_000, 15_000, 380)
	got, err := Rate(series(ts, v...), out, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got.V {
		if !same(r, 2, 1e-12) {
			t.Fatalf("rate at %d = %v, want 2", out[i], r)
		}
	}
}

func TestRatios(t *testing.T) {
	ts := grid(0, minute, 5)
	mean, err := MeanLatency(series(ts, 5000, 0, nan, 3000, 1), series(ts, 100, 0, 5, nan, -1), MicrosPerSecond)
	if err != nil {
		t.Fatal(err)
	}
	checkFloats(t, "mean latency", mean.V, []float64{5e-5, nan, nan, nan, nan}, 1e-15)

	errs, err := ErrorRatio(series(ts, 1, nan, nan, 2, 0), series(ts, 10, 10, 0, nan, 4))
	if err != nil {
		t.Fatal(err)
	}
	// Missing error sample with traffic is 0; no traffic is NaN.
	checkFloats(t, "error ratio", errs.V, []float64{0.1, 0, nan, nan, 0}, 1e-15)
	to, _ := TimeoutRatio(series(ts, 0.5, nan, 1, 1, 1), series(ts, 2, 2, 0, 4, nan))
	checkFloats(t, "timeout ratio", to.V, []float64{0.25, 0, nan, 0.25, nan}, 1e-15)

	if _, err := Ratio(series(ts, 1, 1, 1, 1, 1), series(grid(0, 1, 5), 1, 1, 1, 1, 1), 1); err == nil {
		t.Error("want an error for different grids")
	}
}

func BenchmarkRate(b *testing.B) {
	ts := grid(0, 15_000, 30*5760)
	v := make([]float64, len(ts))
	for i := range v {
		v[i] = float64(i % 10_000)
	}
	c := series(ts, v...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Rate(c, ts, 5*time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ts)), "ns/point")
}
