package derive

import (
	"math"
	"testing"
	"time"
)

func TestMemoryForecast(t *testing.T) {
	ts := grid(0, 15_000, 12)
	// 0.80 rising 0.0001 per second (0.0015 per 15 s step).
	v := make([]float64, len(ts))
	for i := range v {
		v[i] = 0.80 + 0.0015*float64(i)
	}
	v[10] = 0.93 // above the threshold: ETA 0 whatever the trend
	v[11] = nan
	f, err := MemoryForecast(series(ts, v...), ForecastOptions{Window: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if f.Reason[i] != ForecastNoData || !math.IsNaN(f.ETA[i]) {
			t.Errorf("point %d with %d samples: %v %v, want no data", i, i+1, f.Reason[i], f.ETA[i])
		}
	}
	for i := 4; i < 10; i++ {
		want := (0.92 - v[i]) / 0.0001
		if f.Reason[i] != ForecastCrossing || !same(f.ETA[i], want, 1e-9) || !same(f.Slope[i], 0.0001, 1e-9) {
			t.Errorf("point %d: %v eta %v slope %v, want eta %v", i, f.Reason[i], f.ETA[i], f.Slope[i], want)
		}
	}
	if f.Reason[10] != ForecastAbove || f.ETA[10] != 0 {
		t.Errorf("above: %v %v", f.Reason[10], f.ETA[10])
	}
	if f.Reason[11] != ForecastNoData || !math.IsNaN(f.ETA[11]) {
		t.Errorf("NaN current: %v %v", f.Reason[11], f.ETA[11])
	}

	flat := make([]float64, len(ts))
	for i := range flat {
		flat[i] = 0.9 - 0.001*float64(i%2) // wobbling, falling on average
	}
	f, _ = MemoryForecast(series(ts, flat...), ForecastOptions{})
	if f.Reason[11] != ForecastNotRising || !math.IsNaN(f.ETA[11]) {
		t.Errorf("falling: %v %v (slope %v)", f.Reason[11], f.ETA[11], f.Slope[11])
	}
	if ForecastNotRising.String() != "not rising: no crossing predicted" {
		t.Errorf("reason text %q", ForecastNotRising.String())
	}
	if _, err := MemoryForecast(series(ts, v...), ForecastOptions{MinPoints: 1}); err == nil {
		t.Error("want an error for MinPoints 1")
	}
}

func TestMemoryForecastPrecisionOverAMonth(t *testing.T) {
	// 30 days at 15 s with a sawtooth ramp (0.5 → 0.9 over each 6 hours):
	// the sliding sums must still give the exact slope at the very end.
	ts := grid(1_700_000_000_000, 15_000, 30*5760)
	v := make([]float64, len(ts))
	period := int64(6 * time.Hour / time.Millisecond)
	for i, t := range ts {
		v[i] = 0.5 + 0.4*float64((t-ts[0])%period)/float64(period)
	}
	f, err := MemoryForecast(series(ts, v...), ForecastOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slope := 0.4 / (float64(period) / 1000)
	last := len(ts) - 1
	if !same(f.Slope[last], slope, 1e-9) {
		t.Errorf("slope at the end = %v, want %v", f.Slope[last], slope)
	}
	if !same(f.ETA[last], (0.92-v[last])/slope, 1e-6) {
		t.Errorf("eta at the end = %v, want %v", f.ETA[last], (0.92-v[last])/slope)
	}
}

func TestIdleUnderTraffic(t *testing.T) {
	const n = 40
	ts := grid(0, minute, n)
	util, qps, base, ready := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range util {
		util[i], qps[i], base[i], ready[i] = 0.6, 10, 15, 1
		if i >= 5 {
			util[i] = 0
		}
	}
	ready[20] = 0  // a deploy: not ready
	util[25] = nan // no utilisation sample: the idle run starts again at 26
	qps[37] = 7    // 7 < 0.5 × 15: traffic drained
	base[38] = nan // no baseline: not judged true
	got, err := IdleUnderTraffic(series(ts, util...), series(ts, qps...), series(ts, base...), series(ts, ready...), IdleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, n)
	for i := 15; i <= 24; i++ { // idle since minute 5, ten minutes at 15
		want[i] = 1
	}
	want[20] = 0
	for i := 36; i < n; i++ { // idle again since 26
		want[i] = 1
	}
	want[37], want[38] = 0, 0
	checkFloats(t, "idle under traffic", got.V, want, 0)

	// Without a load signal readiness is assumed.
	got, _ = IdleUnderTraffic(series(ts, util...), series(ts, qps...), series(ts, base...), Series{}, IdleOptions{})
	if got.V[20] != 1 {
		t.Errorf("no load signal: point 20 = %v, want 1", got.V[20])
	}
	// Traffic below half its baseline never fires.
	for i := range base {
		base[i] = 25
	}
	got, _ = IdleUnderTraffic(series(ts, util...), series(ts, qps...), series(ts, base...), series(ts, ready...), IdleOptions{})
	if len(RunsAbove(got, 0.5)) != 0 {
		t.Errorf("low traffic fired: %v", got.V)
	}
	if _, err := IdleUnderTraffic(series(ts, util...), series(ts[:2], 1, 1), series(ts, base...), Series{}, IdleOptions{}); err == nil {
		t.Error("want an error for mismatched grids")
	}
}

func BenchmarkMemoryForecast(b *testing.B) {
	ts := grid(0, 15_000, 30*5760)
	v := make([]float64, len(ts))
	for i := range v {
		v[i] = 0.5 + 0.4*float64(i%1440)/1440
	}
	s := series(ts, v...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := MemoryForecast(s, ForecastOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ts)), "ns/point")
}

func BenchmarkHistogramQuantile(b *testing.B) {
	bounds := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, math.Inf(1)}
	ts := grid(0, 15_000, 30*5760)
	h := Histogram{Bounds: bounds, T: ts, Counts: make([][]float64, len(bounds))}
	for i := range bounds {
		h.Counts[i] = make([]float64, len(ts))
		for j := range ts {
			h.Counts[i][j] = float64((i + 1) * (10 + j%7))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Quantile(0.95)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ts)), "ns/point")
}
