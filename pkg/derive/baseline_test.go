package derive

import (
	"math"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

const dayMs = int64(24 * time.Hour / time.Millisecond)

// dayHistory builds a 1-minute history from t0 − days·24h − 1h to t0 + n
// minutes, where the value is level[d] within ±12h of t0 − d·24h (d >= 1)
// and current[i] at t0 + i minutes.
func dayHistory(t0 int64, days int, level map[int]float64, current []float64) Series {
	start := t0 - int64(days)*dayMs - 60*minute
	end := t0 + int64(len(current)-1)*minute
	var s Series
	for ts := start; ts <= end; ts += minute {
		v := nan
		if ts >= t0 {
			v = current[(ts-t0)/minute]
		} else {
			d := int((t0 - ts + dayMs/2) / dayMs)
			if l, ok := level[d]; ok {
				v = l
			}
		}
		s.T = append(s.T, ts)
		s.V = append(s.V, v)
	}
	return s
}

func TestBaselineStatusAndStats(t *testing.T) {
	t0 := int64(1_700_000_000_000) / minute * minute
	current := []float64{3, 3.1, 3.5, 4, 4, 4, 4, 7, nan, 4}
	hist := dayHistory(t0, 3, map[int]float64{1: 1, 2: 2, 3: 3}, current)
	out := grid(t0, minute, len(current))
	opt := BaselineOptions{Days: 3, Window: 2 * time.Minute, MinDays: 2, For: 3 * time.Minute}
	res, err := Baseline(hist, out, opt)
	if err != nil {
		t.Fatal(err)
	}
	// Day-means 1, 2, 3: mean 2, sample std 1.
	for i := range out {
		if res.Days[i] != 3 || res.Mean[i] != 2 || res.Std[i] != 1 {
			t.Fatalf("point %d: days %d mean %v std %v, want 3, 2, 1", i, res.Days[i], res.Mean[i], res.Std[i])
		}
	}
	checkFloats(t, "current", res.Current, current, 0)
	checkFloats(t, "ratio", res.Ratio, []float64{1.5, 1.55, 1.75, 2, 2, 2, 2, 3.5, nan, 2}, 1e-12)
	checkFloats(t, "z", res.Z, []float64{1, 1.1, 1.5, 2, 2, 2, 2, 5, nan, 2}, 1e-12)
	// 1.5 is not above 1.5; the run starts at point 1 and is 3 min old at
	// point 4; 3.5 is P0 at once; NaN breaks the run, so point 9 starts anew.
	wantStatus := []Status{0, 0, 0, 0, 1, 1, 1, 2, 0, 0}
	if !reflect.DeepEqual(res.Status, wantStatus) {
		t.Errorf("status = %v, want %v", res.Status, wantStatus)
	}
	if res.Reason[8] != ReasonNoCurrent || res.Reason[7] != ReasonNone {
		t.Errorf("reasons = %v", res.Reason)
	}
}

func TestBaselineMissingDays(t *testing.T) {
	t0 := int64(1_700_000_000_000) / minute * minute
	current := []float64{10, 10}
	out := grid(t0, minute, 2)

	// Day 2 has no data at all: it is skipped, not counted as zero.
	hist := dayHistory(t0, 3, map[int]float64{1: 1, 3: 3}, current)
	res, err := Baseline(hist, out, BaselineOptions{Days: 3, Window: 2 * time.Minute, MinDays: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Days[0] != 2 || res.Mean[0] != 2 || !same(res.Std[0], math.Sqrt2, 1e-12) {
		t.Errorf("days %d mean %v std %v, want 2, 2, √2", res.Days[0], res.Mean[0], res.Std[0])
	}
	if res.Status[0] != StatusP0 {
		t.Errorf("ratio 5 with 2 days (MinDays 2): status %v, want P0", res.Status[0])
	}

	// Below MinDays nothing is judged, however large the ratio.
	res, err = Baseline(hist, out, BaselineOptions{Days: 3, Window: 2 * time.Minute, MinDays: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status[0] != StatusOK || res.Reason[0] != ReasonFewDays || res.Ratio[0] != 5 {
		t.Errorf("status %v reason %v ratio %v, want ok / few days / 5", res.Status[0], res.Reason[0], res.Ratio[0])
	}

	// One day only: std and z undefined.
	hist = dayHistory(t0, 3, map[int]float64{2: 4}, current)
	res, _ = Baseline(hist, out, BaselineOptions{Days: 3, Window: 2 * time.Minute, MinDays: 1})
	if res.Days[0] != 1 || res.Mean[0] != 4 || !math.IsNaN(res.Std[0]) || !math.IsNaN(res.Z[0]) || res.Ratio[0] != 2.5 {
		t.Errorf("single day: days %d mean %v std %v z %v ratio %v", res.Days[0], res.Mean[0], res.Std[0], res.Z[0], res.Ratio[0])
	}

	// Identical days: std 0, z NaN (not ±Inf).
	hist = dayHistory(t0, 3, map[int]float64{1: 2, 2: 2, 3: 2}, current)
	res, _ = Baseline(hist, out, BaselineOptions{Days: 3, Window: 2 * time.Minute})
	if res.Std[0] != 0 || !math.IsNaN(res.Z[0]) {
		t.Errorf("identical days: std %v z %v", res.Std[0], res.Z[0])
	}

	// A zero baseline cannot be divided by.
	hist = dayHistory(t0, 3, map[int]float64{1: 0, 2: 0, 3: 0}, current)
	res, _ = Baseline(hist, out, BaselineOptions{Days: 3, Window: 2 * time.Minute})
	if res.Reason[0] != ReasonZeroBaseline || !math.IsNaN(res.Ratio[0]) || res.Status[0] != StatusOK {
		t.Errorf("zero baseline: reason %v ratio %v status %v", res.Reason[0], res.Ratio[0], res.Status[0])
	}

	// No history at all.
	res, err = Baseline(Series{}, out, BaselineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Days[0] != 0 || !math.IsNaN(res.Mean[0]) || res.Reason[0] != ReasonNoCurrent {
		t.Errorf("empty history: %+v", res)
	}
}

func TestBaselinePartialWindow(t *testing.T) {
	// Day 1 window [t−24h−2m, t−24h+2m] holds samples 1, NaN, 3, 5, NaN:
	// its mean is 3, over the three real samples.
	t0 := int64(1_700_000_000_000) / minute * minute
	c := t0 - dayMs
	hist := Series{
		T: []int64{c - 3*minute, c - 2*minute, c - minute, c, c + minute, c + 2*minute, c + 3*minute, t0},
		V: []float64{100, 1, nan, 3, 5, nan, 100, 6},
	}
	res, err := Baseline(hist, []int64{t0}, BaselineOptions{Days: 1, Window: 2 * time.Minute, MinDays: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mean[0] != 3 || res.Ratio[0] != 2 {
		t.Errorf("mean %v ratio %v, want 3 and 2", res.Mean[0], res.Ratio[0])
	}
}

func TestBaselineCurrentLookback(t *testing.T) {
	t0 := int64(1_700_000_000_000) / minute * minute
	hist := Series{T: []int64{t0 - dayMs, t0 - 20_000, t0 + 50_000}, V: []float64{2, 4, nan}}
	out := []int64{t0, t0 + 60_000}
	res, _ := Baseline(hist, out, BaselineOptions{Days: 1, Window: time.Minute, MinDays: 1})
	checkFloats(t, "exact only", res.Current, []float64{nan, nan}, 0)
	res, _ = Baseline(hist, out, BaselineOptions{Days: 1, Window: time.Minute, MinDays: 1, CurrentLookback: 30 * time.Second})
	checkFloats(t, "30s lookback", res.Current, []float64{4, nan}, 0)
}

func TestBaselineOptionErrors(t *testing.T) {
	bad := []BaselineOptions{
		{Days: -1},
		{Window: -time.Minute},
		{Window: 13 * time.Hour},
		{P1Ratio: 3, P0Ratio: 1.5},
		{For: -time.Minute},
		{Days: 3, MinDays: 4},
	}
	for _, o := range bad {
		if _, err := Baseline(Series{}, nil, o); err == nil {
			t.Errorf("options %+v: want an error", o)
		}
	}
	if _, err := Baseline(Series{T: []int64{2, 1}, V: []float64{1, 1}}, nil, BaselineOptions{}); err == nil {
		t.Error("want an error for unsorted history")
	}
	if _, err := Baseline(Series{}, []int64{2, 1}, BaselineOptions{}); err == nil {
		t.Error("want an error for unsorted output timestamps")
	}
	if got, want := DefaultBaselineOptions().HistoryStart(10*dayMs), 3*dayMs-10*minute; got != want {
		t.Errorf("HistoryStart = %d, want %d", got, want)
	}
}

// baselineNaive is the obvious per-point scan: the oracle for the
// prefix-sum version and its benchmark reference.
func baselineNaive(h Series, out []int64, opt BaselineOptions) (mean, std []float64, days []int) {
	opt, _ = opt.withDefaults()
	win := opt.Window.Milliseconds()
	for _, t := range out {
		var means []float64
		for d := 1; d <= opt.Days; d++ {
			c := t - int64(d)*dayMs
			s, n := 0.0, 0
			for i, ts := range h.T {
				if ts >= c-win && ts <= c+win && !math.IsNaN(h.V[i]) {
					s += h.V[i]
					n++
				}
			}
			if n > 0 {
				means = append(means, s/float64(n))
			}
		}
		m, sd := nan, nan
		if len(means) > 0 {
			m = 0
			for _, x := range means {
				m += x
			}
			m /= float64(len(means))
		}
		if len(means) > 1 {
			ss := 0.0
			for _, x := range means {
				ss += (x - m) * (x - m)
			}
			sd = math.Sqrt(ss / float64(len(means)-1))
		}
		mean, std, days = append(mean, m), append(std, sd), append(days, len(means))
	}
	return
}

func TestBaselineMatchesNaiveScan(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	t0 := int64(1_700_000_000_000)
	// Irregular timestamps, NaN holes and a missing stretch.
	var h Series
	for ts := t0 - 4*dayMs; ts <= t0+2*time.Hour.Milliseconds(); ts += 20_000 + rng.Int63n(40_000) {
		v := 0.05 + 0.02*rng.Float64()
		if rng.Intn(7) == 0 || (ts > t0-2*dayMs-time.Hour.Milliseconds() && ts < t0-2*dayMs+time.Hour.Milliseconds()) {
			v = nan
		}
		h.T = append(h.T, ts)
		h.V = append(h.V, v)
	}
	out := grid(t0, 37_000, 150)
	opt := BaselineOptions{Days: 3, Window: 7 * time.Minute, MinDays: 1}
	res, err := Baseline(h, out, opt)
	if err != nil {
		t.Fatal(err)
	}
	mean, std, days := baselineNaive(h, out, opt)
	checkFloats(t, "mean", res.Mean, mean, 1e-12)
	checkFloats(t, "std", res.Std, std, 1e-9)
	if !reflect.DeepEqual(res.Days, days) {
		t.Errorf("days = %v, want %v", res.Days, days)
	}
	sawGap := false
	for _, d := range days {
		sawGap = sawGap || d == 2
	}
	if !sawGap {
		t.Error("test data should include points with a missing day")
	}
}

func longHistory(days int, step int64) (Series, []int64) {
	t0 := int64(1_700_000_000_000) / step * step
	opt := DefaultBaselineOptions()
	start := opt.HistoryStart(t0)
	end := t0 + int64(days)*dayMs
	n := int((end-start)/step) + 1
	h := Series{T: make([]int64, n), V: make([]float64, n)}
	for i := range h.T {
		ts := start + int64(i)*step
		h.T[i] = ts
		h.V[i] = 0.04 + 0.01*math.Sin(float64(ts%dayMs)/float64(dayMs)*2*math.Pi)
		if i%97 == 0 {
			h.V[i] = nan
		}
	}
	out, _ := Grid(t0, end, step)
	return h, out
}

// BenchmarkBaseline shows linear cost at a 15 s step from one day to thirty
// days of output: the work per history sample plus per output point and day
// (ns/unit) stays flat; ns/point falls only because the fixed 7-day history
// prefix is shared by more output points.
func BenchmarkBaseline(b *testing.B) {
	for _, days := range []int{1, 7, 30} {
		h, out := longHistory(days, 15_000)
		b.Run(time.Duration(days*24*int(time.Hour)).String(), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := Baseline(h, out, BaselineOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(ns/float64(len(out)), "ns/point")
			b.ReportMetric(ns/float64(len(h.T)+7*len(out)), "ns/unit")
		})
	}
}

// BenchmarkBaselineVsNaive runs the prefix-sum baseline and the per-point
// window scan on the same history and output points (1 day at 15 s).
func BenchmarkBaselineVsNaive(b *testing.B) {
	h, out := longHistory(1, 15_000)
	b.Run("prefix-sums", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := Baseline(h, out, BaselineOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(out)), "ns/point")
	})
	b.Run("naive-scan", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			baselineNaiveWindowed(h, out, DefaultBaselineOptions())
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(out)), "ns/point")
	})
}

// baselineNaiveWindowed is the per-point scan with a binary search to each
// window's start (a fair reference: O(points·days·window)).
func baselineNaiveWindowed(h Series, out []int64, opt BaselineOptions) []float64 {
	win := opt.Window.Milliseconds()
	res := make([]float64, len(out))
	for j, t := range out {
		total, days := 0.0, 0
		for d := 1; d <= opt.Days; d++ {
			c := t - int64(d)*dayMs
			i := searchFrom(h.T, c-win)
			s, n := 0.0, 0
			for ; i < len(h.T) && h.T[i] <= c+win; i++ {
				if !math.IsNaN(h.V[i]) {
					s += h.V[i]
					n++
				}
			}
			if n > 0 {
				total += s / float64(n)
				days++
			}
		}
		res[j] = total / float64(days)
	}
	return res
}

func searchFrom(t []int64, from int64) int {
	lo, hi := 0, len(t)
	for lo < hi {
		m := (lo + hi) / 2
		if t[m] < from {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
