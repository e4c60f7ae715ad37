package derive

import (
	"math"
	"testing"
	"time"
)

// TestSingleSample runs every series function on one point: nothing panics
// and each answers "no data" or the one value it can know.
func TestSingleSample(t *testing.T) {
	ts := []int64{1_700_000_000_000}
	one := series(ts, 0.05)

	if r, err := Rate(one, ts, time.Minute); err != nil || !math.IsNaN(r.V[0]) {
		t.Errorf("rate of one sample = %v, %v", r.V, err)
	}
	if j, err := Jitter(one, series(ts, 0.01)); err != nil || !same(j.V[0], 5, 1e-12) {
		t.Errorf("jitter = %v, %v", j.V, err)
	}
	s, err := SplitLatency(SplitInput{Queue: one, Compute: series(ts, 0.2)}, SplitOptions{})
	if err != nil || Regime(s.Regime[0]) != ComputeDominated || !math.IsNaN(s.Baseline[Queue][0]) {
		t.Errorf("split = %+v, %v", s, err)
	}
	b, err := Baseline(one, ts, BaselineOptions{})
	if err != nil || b.Current[0] != 0.05 || b.Days[0] != 0 || b.Reason[0] != ReasonFewDays {
		t.Errorf("baseline = %+v, %v", b, err)
	}
	f, err := MemoryForecast(series(ts, 0.5), ForecastOptions{})
	if err != nil || f.Reason[0] != ForecastNoData {
		t.Errorf("forecast = %+v, %v", f, err)
	}
	f, _ = MemoryForecast(series(ts, 0.95), ForecastOptions{})
	if f.Reason[0] != ForecastAbove || f.ETA[0] != 0 {
		t.Errorf("forecast above = %+v", f)
	}
	m, err := WarmupMask(ts, InstanceSignals{Ready: series(ts, 0)}, 0)
	if err != nil || m[0] != WarmNotReady {
		t.Errorf("mask = %v, %v", m, err)
	}
	idle, err := IdleUnderTraffic(series(ts, 0), series(ts, 5), series(ts, 5), Series{}, IdleOptions{})
	if err != nil || idle.V[0] != 0 {
		t.Errorf("idle = %v, %v", idle.V, err)
	}
	if q := HistogramQuantile(0.5, []Bucket{{math.Inf(1), 3}}); !math.IsNaN(q) {
		t.Errorf("quantile of +Inf only = %v", q)
	}
}

// TestEmptySeries: zero-length input gives zero-length output, not a panic.
func TestEmptySeries(t *testing.T) {
	var empty Series
	if r, err := Rate(empty, nil, time.Minute); err != nil || len(r.V) != 0 {
		t.Errorf("rate = %v, %v", r, err)
	}
	if s, err := SplitLatency(SplitInput{Queue: empty, Compute: empty}, SplitOptions{}); err != nil || len(s.Regime) != 0 {
		t.Errorf("split = %v, %v", s, err)
	}
	if f, err := MemoryForecast(empty, ForecastOptions{}); err != nil || len(f.ETA) != 0 {
		t.Errorf("forecast = %v, %v", f, err)
	}
	if h, err := Histograms(nil); err != nil || len(h) != 0 {
		t.Errorf("histograms = %v, %v", h, err)
	}
	if out, err := SumBy(nil, []string{"le"}); err != nil || out != nil {
		t.Errorf("sum = %v, %v", out, err)
	}
}

// FuzzHistogramQuantile: any buckets and q give NaN, ±Inf for q outside
// [0, 1], or a value within the histogram's finite bounds (0 counting as the
// lowest bucket's start).
func FuzzHistogramQuantile(f *testing.F) {
	f.Add(0.5, 0.1, 10.0, 0.5, 50.0, 1.0, 90.0, 100.0)
	f.Add(0.99, -1.0, 5.0, 0.0, 3.0, 2.0, 1.0, 0.0)
	f.Add(0.0, 0.5, 0.0, 0.5, 0.0, 0.5, 0.0, 0.0)
	f.Add(1.0, math.NaN(), 1.0, 2.0, math.NaN(), 3.0, 5.0, 5.0)
	f.Fuzz(func(t *testing.T, q, b1, c1, b2, c2, b3, c3, cInf float64) {
		buckets := []Bucket{{b1, c1}, {b2, c2}, {b3, c3}, {math.Inf(1), cInf}}
		got := HistogramQuantile(q, buckets)
		if math.IsNaN(got) {
			return
		}
		switch {
		case q < 0:
			if !math.IsInf(got, -1) {
				t.Fatalf("q=%v: got %v, want -Inf", q, got)
			}
			return
		case q > 1:
			if !math.IsInf(got, 1) {
				t.Fatalf("q=%v: got %v, want +Inf", q, got)
			}
			return
		}
		lo, hi := 0.0, math.Inf(-1)
		for _, b := range buckets {
			if !math.IsNaN(b.Count) && !math.IsNaN(b.UpperBound) && !math.IsInf(b.UpperBound, 0) {
				lo = math.Min(lo, b.UpperBound)
				hi = math.Max(hi, b.UpperBound)
			}
		}
		if hi == math.Inf(-1) {
			t.Fatalf("value %v from a histogram without finite buckets", got)
		}
		if math.IsInf(hi, 0) || math.IsInf(lo, 0) || math.Abs(hi) > 1e300 || math.Abs(lo) > 1e300 {
			return // interpolation between huge bounds may overflow to ±Inf, as it does in Prometheus
		}
		if got < lo-1e-9*math.Abs(lo) || got > hi+1e-9*math.Abs(hi) {
			t.Fatalf("q=%v buckets %v: got %v outside [%v, %v]", q, buckets, got, lo, hi)
		}
	})
}
