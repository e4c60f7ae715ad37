package derive

import (
	"math"
	"testing"
	"time"
)

// steps returns n values equal to before, then after from index at on.
func steps(n, at int, before, after float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = before
		if i >= at {
			v[i] = after
		}
	}
	return v
}

func TestSplitLatencyRegimes(t *testing.T) {
	const n, at = 30, 20
	ts := grid(0, minute, n)
	opt := SplitOptions{BaselineWindow: 10 * time.Minute}
	tests := []struct {
		name                  string
		queue, compute, netw  []float64
		wantBefore, wantAfter Regime
	}{
		// Compute holds 80 % at rest: the level rule calls it compute-dominated.
		// The queue then quadruples while compute stays: the change rule
		// says queue-dominated although compute still holds 71 %.
		{"rising queue over stable compute", steps(n, at, 0.01, 0.04), steps(n, at, 0.1, 0.1), nil, ComputeDominated, QueueDominated},
		{"rising compute over stable queue", steps(n, at, 0.02, 0.02), steps(n, at, 0.025, 0.08), nil, Balanced, ComputeDominated},
		// Both grow by 30 ms: neither holds 60 % of the increase.
		{"both rising", steps(n, at, 0.02, 0.05), steps(n, at, 0.04, 0.07), nil, ComputeDominated, Balanced},
		// A 200 ms gateway gap over a 50 ms service.
		{"network jitter", steps(n, at, 0.01, 0.01), steps(n, at, 0.04, 0.04), steps(n, at, 0.001, 0.2), ComputeDominated, NetworkDominated},
		// 1 ms → 3 ms is 3× but only 2 ms on a 41 ms service: below its
		// floor (a tenth of 41 ms), so the level rule holds (compute 40/43).
		{"tiny rise ignored", steps(n, at, 0.001, 0.003), steps(n, at, 0.04, 0.04), nil, ComputeDominated, ComputeDominated},
		// The same 2 ms on a 5 ms service is 40 % on every request: its floor
		// is 1 ms (a tenth of 5 ms is under MinStep), so the queue rises.
		{"a fast service's small step", steps(n, at, 0.001, 0.003), steps(n, at, 0.004, 0.004), nil, ComputeDominated, QueueDominated},
		// 3 ms on a 25 ms service: under MinRise, over its tenth (2.5 ms).
		{"a tenth of the time", steps(n, at, 0.002, 0.005), steps(n, at, 0.023, 0.023), nil, ComputeDominated, QueueDominated},
		// 2 ms on that service is under its tenth.
		{"under a tenth of the time", steps(n, at, 0.002, 0.004), steps(n, at, 0.023, 0.023), nil, ComputeDominated, ComputeDominated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := SplitInput{Queue: series(ts, tc.queue...), Compute: series(ts, tc.compute...)}
			if tc.netw != nil {
				in.Network = series(ts, tc.netw...)
			}
			s, err := SplitLatency(in, opt)
			if err != nil {
				t.Fatal(err)
			}
			if got := Regime(s.Regime[at-1]); got != tc.wantBefore {
				t.Errorf("before: %v, want %v", got, tc.wantBefore)
			}
			if got := Regime(s.Regime[at]); got != tc.wantAfter {
				t.Errorf("after: %v, want %v", got, tc.wantAfter)
			}
			total := tc.queue[at] + tc.compute[at]
			if tc.netw != nil {
				total += tc.netw[at]
			}
			if !same(s.Total[at], total, 1e-12) || !same(s.Share[Queue][at], tc.queue[at]/total, 1e-12) ||
				!same(s.Share[Compute][at], tc.compute[at]/total, 1e-12) {
				t.Errorf("total %v shares %v/%v", s.Total[at], s.Share[Queue][at], s.Share[Compute][at])
			}
			if !same(s.Baseline[Queue][at], tc.queue[at-1], 1e-12) {
				t.Errorf("queue baseline at the step = %v, want %v", s.Baseline[Queue][at], tc.queue[at-1])
			}
			if (tc.netw == nil) != (s.Share[Network] == nil) {
				t.Errorf("network share present = %v", s.Share[Network] != nil)
			}
		})
	}
}

func TestSplitLatencyBaselineAbsorbsLongSurge(t *testing.T) {
	// A queue step from 10 ms to 40 ms over compute at 100 ms. The trailing
	// 10-minute mean after k minutes of surge is 10 + 3k ms; the queue stops
	// "rising" once 40 <= 1.5 × (10 + 3k), i.e. from k = 6 (mean 28 ms),
	// and the level rule (compute 71 %) takes over.
	const n, at = 40, 20
	ts := grid(0, minute, n)
	s, err := SplitLatency(SplitInput{Queue: series(ts, steps(n, at, 0.01, 0.04)...), Compute: series(ts, steps(n, at, 0.1, 0.1)...)},
		SplitOptions{BaselineWindow: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 10; k++ {
		want := QueueDominated
		if k >= 6 {
			want = ComputeDominated
		}
		if got := Regime(s.Regime[at+k]); got != want {
			t.Errorf("surge minute %d: %v, want %v (baseline %v)", k, got, want, s.Baseline[Queue][at+k])
		}
	}
}

func TestSplitLatencyMissingData(t *testing.T) {
	ts := grid(0, minute, 5)
	s, err := SplitLatency(SplitInput{
		Queue:   series(ts, 0.01, nan, 0.01, 0, -0.01),
		Compute: series(ts, 0.04, 0.04, 0.04, 0, 0.04),
		Network: series(ts, 0.05, 0.05, nan, 0, 0.05),
	}, SplitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Point 0: no baseline yet, level rule: 0.05 of 0.1 is 50 % → balanced.
	// Point 1: queue missing → no data. Point 2: network missing → split
	// between queue and compute only. Point 3: zero total → no data.
	// Point 4: a negative queue counts as zero.
	checkFloats(t, "total", s.Total, []float64{0.1, nan, 0.05, 0, 0.09}, 1e-12)
	checkFloats(t, "queue share", s.Share[Queue], []float64{0.1, nan, 0.2, nan, 0}, 1e-12)
	checkFloats(t, "network share", s.Share[Network], []float64{0.5, nan, nan, nan, 0.05 / 0.09}, 1e-12)
	checkFloats(t, "regime", s.Regime, []float64{0, nan, float64(ComputeDominated), nan, 0}, 0)
	if RegimeName(s.Regime[1]) != "no data" || RegimeName(s.Regime[2]) != "compute-dominated" {
		t.Errorf("names: %q %q", RegimeName(s.Regime[1]), RegimeName(s.Regime[2]))
	}
	sl := s.Slice(ts[1], ts[2])
	if len(sl.T) != 2 || len(sl.Share[Network]) != 2 || math.IsNaN(sl.Total[1]) {
		t.Errorf("slice = %+v", sl)
	}
}

func TestSplitLatencyErrors(t *testing.T) {
	ts := grid(0, minute, 3)
	q, c := series(ts, 1, 1, 1), series(ts, 1, 1, 1)
	if _, err := SplitLatency(SplitInput{Queue: q, Compute: series(ts[:2], 1, 1)}, SplitOptions{}); err == nil {
		t.Error("want an error for mismatched segments")
	}
	for _, o := range []SplitOptions{{RiseRatio: 0.5}, {DominantShare: 0.4}, {DominantShare: 1.2}, {MinRise: -1}, {MinRiseShare: 1}, {MinRiseShare: math.NaN()}, {BaselineWindow: -time.Minute}} {
		if _, err := SplitLatency(SplitInput{Queue: q, Compute: c}, o); err == nil {
			t.Errorf("options %+v: want an error", o)
		}
	}
	for r, want := range map[Regime]string{Balanced: "balanced", QueueDominated: "queue-dominated", ComputeDominated: "compute-dominated", NetworkDominated: "network-dominated"} {
		if r.String() != want {
			t.Errorf("%d: %q", int(r), r.String())
		}
	}
}

func BenchmarkSplitLatency(b *testing.B) {
	ts := grid(0, 15_000, 30*5760)
	q, c, nw := make([]float64, len(ts)), make([]float64, len(ts)), make([]float64, len(ts))
	for i := range ts {
		q[i] = 0.01 + 0.005*math.Sin(float64(i)/300)
		c[i] = 0.04
		nw[i] = 0.002
	}
	in := SplitInput{Queue: series(ts, q...), Compute: series(ts, c...), Network: series(ts, nw...)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := SplitLatency(in, SplitOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ts)), "ns/point")
}

func TestRiseFloor(t *testing.T) {
	d := DefaultSplitOptions()
	tests := []struct {
		name string
		o    SplitOptions
		base float64
		want float64
	}{
		{"a slow service: MinRise", d, 0.4, 0.005},
		{"at fifty milliseconds the tenth meets MinRise", d, 0.05, 0.005},
		{"a 25 ms service: its tenth", d, 0.025, 0.0025},
		{"a 5 ms service: MinStep", d, 0.005, MinStep},
		{"no baseline: MinRise", d, math.NaN(), 0.005},
		{"a zero baseline: MinRise", d, 0, 0.005},
		{"share turned off", SplitOptions{MinRise: 0.005, MinRiseShare: -1}, 0.01, 0.005},
		{"MinRise under MinStep stays the line", SplitOptions{MinRise: 0.0005, MinRiseShare: 0.1}, 0.001, 0.0005},
	}
	for _, tc := range tests {
		if got := tc.o.RiseFloor(tc.base); !same(got, tc.want, 1e-15) {
			t.Errorf("%s: RiseFloor(%g) = %g, want %g", tc.name, tc.base, got, tc.want)
		}
	}
}
