package testbed_test

import (
	"math"
	"sort"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

var end = testbed.DefaultEnd

// mid is a representative instant of an incident: its middle, or an hour into the open-ended
// canary.
func mid(in testbed.Incident) time.Time {
	if in.Kind == testbed.CanarySlower {
		return in.Start.Add(time.Hour)
	}
	return in.Start.Add(in.End.Sub(in.Start) / 2)
}

func mustIncident(t *testing.T, s *testbed.Scenario, k testbed.IncidentKind) testbed.Incident {
	t.Helper()
	in, ok := s.Incident(k)
	if !ok {
		t.Fatalf("scenario has no %s incident", k)
	}
	return in
}

func TestTopology(t *testing.T) {
	s := testbed.Default(end)
	if got := s.Instances(); len(got) != 3 || got[0] != "node-a:8000" {
		t.Errorf("instances: %v", got)
	}
	if s.GPUsPerInstance() != 8 {
		t.Errorf("GPUs per instance: %d", s.GPUsPerInstance())
	}
	if got := s.Models(); len(got) != 2 {
		t.Errorf("models: %v", got)
	}
	for _, m := range s.Models() {
		if len(s.Versions(m)) != 2 || s.CanaryInstance(m) == "" {
			t.Errorf("%s: versions %v, canary on %q", m, s.Versions(m), s.CanaryInstance(m))
		}
		// The stable version runs everywhere, the canary on one instance only.
		for _, in := range s.Instances() {
			if s.QPS(in, m, s.StableVersion(m), end) <= 0 {
				t.Errorf("%s %s: no stable traffic", in, m)
			}
			canary := s.QPS(in, m, s.CanaryVersion(m), end) > 0
			if canary != (in == s.CanaryInstance(m)) {
				t.Errorf("%s %s: canary traffic %v", in, m, canary)
			}
		}
	}
	if s.Start() != end.Add(-8*24*time.Hour) {
		t.Errorf("history start %s", s.Start())
	}
}

func TestDiurnalTraffic(t *testing.T) {
	s := testbed.Default(end)
	day := end.Add(-4 * 24 * time.Hour).Truncate(24 * time.Hour) // a clean UTC day
	for _, m := range s.Models() {
		lo, hi := math.Inf(1), 0.0
		var peak time.Time
		for d := time.Duration(0); d < 24*time.Hour; d += time.Minute {
			q := s.QPS("node-a:8000", m, "", day.Add(d))
			lo = math.Min(lo, q)
			if q > hi {
				hi, peak = q, day.Add(d)
			}
		}
		if r := hi / lo; r < 2.7 || r > 3.3 {
			t.Errorf("%s: peak/trough %.2f, want ~3", m, r)
		}
		if h := peak.Hour(); h < 14 || h > 17 {
			t.Errorf("%s: peak at %s, want afternoon UTC", m, peak.Format("15:04"))
		}
	}
	// The weekly ripple averages out over the 7 previous days at the same time of day, so a
	// baseline mean equals the diurnal curve; single days differ (non-zero spread).
	at := end.Add(-2 * time.Hour)
	var sum, sq float64
	for d := 1; d <= 7; d++ {
		q := s.QPS("node-b:8000", "text-embedder", "", at.Add(-time.Duration(d)*24*time.Hour))
		sum += q
		sq += q * q
	}
	mean := sum / 7
	sd := math.Sqrt(sq/7 - mean*mean)
	if sd/mean < 0.01 || sd/mean > 0.08 {
		t.Errorf("day-to-day QPS spread %.3f of the mean, want a few %%", sd/mean)
	}
}

func TestIncidentsSpareTheBaselineWeek(t *testing.T) {
	s := testbed.Default(end)
	kinds := map[testbed.IncidentKind]bool{}
	for _, in := range s.Incidents() {
		kinds[in.Kind] = true
		if !in.Start.After(end.Add(-26*time.Hour)) || !in.Start.Before(end) || !in.End.After(in.Start) {
			t.Errorf("%s: [%s, %s) not in the last 26 h", in.Kind, in.Start, in.End)
		}
		if in.Instance == "" || in.Summary == "" {
			t.Errorf("%s: missing instance or summary", in.Kind)
		}
		// Every incident's same-time-of-day window on the 7 previous days is clean.
		for d := 1; d <= 7; d++ {
			back := mid(in).Add(-time.Duration(d) * 24 * time.Hour)
			for _, other := range s.Incidents() {
				if other.Active(back) {
					t.Errorf("%s minus %d days falls in %s", in.Kind, d, other.Kind)
				}
			}
		}
	}
	for _, k := range []testbed.IncidentKind{testbed.QueueSurge, testbed.ComputeSlowdown, testbed.NetworkJitter,
		testbed.WarmupRestart, testbed.CanarySlower, testbed.GPUIdle} {
		if !kinds[k] {
			t.Errorf("missing incident %s", k)
		}
	}
}

func ratio(a, b float64) float64 { return a / b }

func TestIncidentSignatures(t *testing.T) {
	s := testbed.Default(end)
	day := 24 * time.Hour

	t.Run("queue surge", func(t *testing.T) {
		in := mustIncident(t, s, testbed.QueueSurge)
		at, before := mid(in), mid(in).Add(-day)
		q := ratio(s.SegmentMean(testbed.Queue, in.Instance, in.Model, in.Version, at), s.SegmentMean(testbed.Queue, in.Instance, in.Model, in.Version, before))
		c := ratio(s.SegmentMean(testbed.Compute, in.Instance, in.Model, in.Version, at), s.SegmentMean(testbed.Compute, in.Instance, in.Model, in.Version, before))
		if q < 7 || q > 11 || c < 0.9 || c > 1.1 {
			t.Errorf("queue x%.2f (want ~8), compute x%.2f (want flat)", q, c)
		}
		if r := ratio(s.QPS(in.Instance, in.Model, in.Version, at), s.QPS(in.Instance, in.Model, in.Version, before)); r < 1.3 || r > 1.7 {
			t.Errorf("traffic x%.2f, want ~1.5", r)
		}
		if s.SegmentMean(testbed.Queue, in.Instance, in.Model, in.Version, in.End) > 2*s.SegmentMean(testbed.Queue, in.Instance, in.Model, in.Version, before) {
			t.Error("queue still high after the incident ends")
		}
	})

	t.Run("compute slowdown", func(t *testing.T) {
		in := mustIncident(t, s, testbed.ComputeSlowdown)
		at, before := mid(in), mid(in).Add(-day)
		c := ratio(s.SegmentMean(testbed.Compute, in.Instance, in.Model, "", at), s.SegmentMean(testbed.Compute, in.Instance, in.Model, "", before))
		q := ratio(s.SegmentMean(testbed.Queue, in.Instance, in.Model, "", at), s.SegmentMean(testbed.Queue, in.Instance, in.Model, "", before))
		if c < 3.5 || c > 5 || q > 2 {
			t.Errorf("compute x%.2f (want ~4), queue x%.2f (want modest)", c, q)
		}
		for _, g := range in.GPUs {
			for d := time.Duration(0); d < in.End.Sub(in.Start); d += 15 * time.Second {
				if m := s.GPU(in.Instance, g, in.Start.Add(d)).MemUsedRatio; m <= 0.92 {
					t.Fatalf("GPU %d at +%s: memory %.3f, want > 0.92", g, d, m)
				}
			}
			// Memory climbs before: past 85 % half an hour before the start, below 92 % until it.
			early, late := s.GPU(in.Instance, g, in.Start.Add(-90*time.Minute)), s.GPU(in.Instance, g, in.Start.Add(-20*time.Minute))
			if early.MemUsedRatio > 0.85 || late.MemUsedRatio < 0.85 || late.MemUsedRatio >= 0.92 {
				t.Errorf("GPU %d ramp: %.3f at -90m, %.3f at -20m", g, early.MemUsedRatio, late.MemUsedRatio)
			}
			if after := s.GPU(in.Instance, g, in.End.Add(time.Minute)); after.MemUsedRatio > 0.85 {
				t.Errorf("GPU %d memory %.3f after the incident", g, after.MemUsedRatio)
			}
		}
	})

	t.Run("network jitter", func(t *testing.T) {
		in := mustIncident(t, s, testbed.NetworkJitter)
		at, before := mid(in), mid(in).Add(-day)
		for _, m := range s.Models() {
			e2e := ratio(s.LatencyQuantile(in.Instance, m, "", 0.99, at), s.LatencyQuantile(in.Instance, m, "", 0.99, before))
			if math.Abs(e2e-1) > 0.05 {
				t.Errorf("%s: service P99 moved x%.3f; the network incident must not touch it", m, e2e)
			}
			added := s.SegmentQuantile(testbed.Gateway, in.Instance, m, "", 0.99, at) - s.LatencyQuantile(in.Instance, m, "", 0.99, at)
			if added < 0.18 || added > 0.25 {
				t.Errorf("%s: gateway P99 exceeds service P99 by %.3fs, want ~0.2s", m, added)
			}
			if n := s.SegmentMean(testbed.Network, in.Instance, m, "", at) - s.SegmentMean(testbed.Network, in.Instance, m, "", before); n < 0.05 {
				t.Errorf("%s: network mean up %.3fs only", m, n)
			}
		}
	})

	t.Run("warm-up after restart", func(t *testing.T) {
		in := mustIncident(t, s, testbed.WarmupRestart)
		if s.ProcessStart(in.Instance, in.Start) != in.Start || s.ProcessStart(in.Instance, in.Start.Add(-time.Second)).Equal(in.Start) {
			t.Error("process start time does not change at the restart")
		}
		for d := time.Duration(0); d < testbed.LoadDuration; d += 10 * time.Second {
			if s.Ready(in.Instance, in.Start.Add(d)) || s.QPS(in.Instance, "", "", in.Start.Add(d)) != 0 {
				t.Fatalf("+%s: ready or serving while loading", d)
			}
		}
		serving := in.Start.Add(testbed.LoadDuration)
		if !s.Ready(in.Instance, serving) || s.QPS(in.Instance, "", "", serving) == 0 {
			t.Fatal("not serving after loading")
		}
		for _, m := range s.Models() {
			steady := s.LatencyQuantile(in.Instance, m, "", 0.95, in.End.Add(time.Minute))
			first := s.LatencyQuantile(in.Instance, m, "", 0.95, serving.Add(time.Second))
			if r := first / steady; math.Abs(r-8) > 0.01 {
				t.Errorf("%s: first warm-up P95 x%.3f of steady state, want 8", m, r)
			}
			if r := s.LatencyQuantile(in.Instance, m, "", 0.95, in.End.Add(-time.Second)) / steady; r <= 1 || r >= 2 {
				t.Errorf("%s: last warm-up P95 x%.3f, want a little above steady state", m, r)
			}
		}
		if s.Requests(in.Instance, "", "", in.Start) != 0 {
			t.Error("counters did not reset at the restart")
		}
		for g := 0; g < s.GPUsPerInstance(); g++ {
			if u := s.GPU(in.Instance, g, in.Start.Add(30*time.Second)).UtilRatio; u != 0 {
				t.Errorf("GPU %d busy (%.2f) while the model loads", g, u)
			}
		}
	})

	t.Run("canary", func(t *testing.T) {
		in := mustIncident(t, s, testbed.CanarySlower)
		at := in.Start.Add(90 * time.Minute)
		stable := s.StableVersion(in.Model)
		for _, q := range []float64{0.5, 0.95, 0.99} {
			r := s.LatencyQuantile(in.Instance, in.Model, in.Version, q, at) / s.LatencyQuantile(in.Instance, in.Model, stable, q, at)
			if math.Abs(r-1.15) > 1e-6 {
				t.Errorf("P%g canary/stable %.6f, want 1.15", q*100, r)
			}
		}
		if s.QPS(in.Instance, in.Model, in.Version, in.Start.Add(-time.Second)) != 0 {
			t.Error("canary serves before its deploy")
		}
		// The other model's canary runs throughout and is not slower (a passing release).
		other := "text-embedder"
		r := s.LatencyQuantile(s.CanaryInstance(other), other, s.CanaryVersion(other), 0.95, s.Start().Add(time.Hour)) /
			s.LatencyQuantile(s.CanaryInstance(other), other, s.StableVersion(other), 0.95, s.Start().Add(time.Hour))
		if r > 1.05 {
			t.Errorf("%s canary x%.3f slower", other, r)
		}
	})

	t.Run("GPU idle under traffic", func(t *testing.T) {
		in := mustIncident(t, s, testbed.GPUIdle)
		if in.End.Sub(in.Start) < 10*time.Minute {
			t.Errorf("idle for %s only; the alert needs 10 minutes", in.End.Sub(in.Start))
		}
		for d := time.Duration(0); d < in.End.Sub(in.Start); d += 30 * time.Second {
			at := in.Start.Add(d)
			g := s.GPU(in.Instance, in.GPUs[0], at)
			if g.UtilRatio != 0 || !s.Ready(in.Instance, at) {
				t.Fatalf("+%s: util %.2f ready %v", d, g.UtilRatio, s.Ready(in.Instance, at))
			}
			if r := s.QPS(in.Instance, in.Model, "", at) / s.QPS(in.Instance, in.Model, "", at.Add(-day)); r < 0.9 {
				t.Fatalf("+%s: traffic x%.2f of yesterday, want normal", d, r)
			}
		}
		g := s.GPU(in.Instance, in.GPUs[0], in.End.Add(-time.Second))
		if len(g.XIDs) == 0 || g.XIDs[0].Time != in.Start {
			t.Errorf("no XID event at the incident start: %+v", g.XIDs)
		}
		if f := s.FallbackRatio(in.Instance, in.Model, "", mid(in)); f < 0.2 {
			t.Errorf("fallback ratio %.3f, want the idle GPU's share", f)
		}
		if u := s.GPU(in.Instance, in.GPUs[0], in.End).UtilRatio; u == 0 {
			t.Error("GPU still idle after the incident")
		}
	})
}

// Jitter (P99/P50) exceeds 5 exactly where a jitter source sits on the path: the queue surge and
// the memory-full slowdown (service latency), the network jitter (gateway latency only).
func TestJitterOnlyWhereCaused(t *testing.T) {
	s := testbed.Default(end)
	type probe struct {
		name string
		at   time.Time
	}
	probes := []probe{{"ordinary", end.Add(-3*24*time.Hour + 5*time.Hour)}, {"peak", end.Add(-2*24*time.Hour + 4*time.Hour)}}
	for _, in := range s.Incidents() {
		at := mid(in)
		if in.Kind == testbed.WarmupRestart {
			at = in.Start.Add(testbed.LoadDuration + time.Second)
		}
		probes = append(probes, probe{string(in.Kind), at})
	}
	causes := func(in testbed.Incident, g testbed.Segment, inst, model, version string) bool {
		if in.Instance != inst || (in.Model != "" && in.Model != model) || (in.Version != "" && in.Version != version) {
			return false
		}
		switch in.Kind {
		case testbed.QueueSurge, testbed.ComputeSlowdown:
			return true
		case testbed.NetworkJitter:
			return g == testbed.Gateway
		}
		return false
	}
	for _, p := range probes {
		for _, inst := range s.Instances() {
			for _, m := range s.Models() {
				for _, v := range s.Versions(m) {
					if s.QPS(inst, m, v, p.at) == 0 {
						continue
					}
					for _, g := range []testbed.Segment{testbed.E2E, testbed.Gateway} {
						want := false
						for _, in := range s.Incidents() {
							if in.Active(p.at) && causes(in, g, inst, m, v) {
								want = true
							}
						}
						j := s.Jitter(g, inst, m, v, p.at)
						if want && j <= 5.5 {
							t.Errorf("%s %s %s %s %s: jitter %.2f, want > 5", p.name, inst, m, v, g, j)
						}
						if !want && j >= 3 {
							t.Errorf("%s %s %s %s %s: jitter %.2f, want well under 5", p.name, inst, m, v, g, j)
						}
					}
				}
			}
		}
	}
}

// Exposed counters only grow, except when the process restarts; buckets are cumulative.
func TestCountersMonotonicExceptAtRestarts(t *testing.T) {
	s := testbed.Default(end)
	src := s.Source()
	var times []time.Time
	for at := s.Start(); !at.After(end.Add(2 * time.Hour)); at = at.Add(20 * time.Minute) {
		times = append(times, at)
	}
	for i, in := range s.Incidents() {
		for d := -3 * time.Minute; d <= 5*time.Minute; d += 15 * time.Second {
			times = append(times, in.Start.Add(d+time.Duration(i)*time.Second))
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	counters := []expo.Counter{expo.Requests, expo.RequestsOK, expo.Errors, expo.Timeouts, expo.Fallbacks}
	measures := []expo.Measure{expo.Latency, expo.QueueTime, expo.ComputeTime, expo.GatewayTime, expo.InputLength, expo.BatchSize, expo.Confidence}
	resets := 0
	for _, inst := range src.Instances() {
		for _, st := range src.Streams(inst) {
			prev := map[string]float64{}
			var prevStart time.Time
			for _, at := range times {
				if at.Before(st.Since) {
					continue
				}
				restarted := !src.ProcessStart(inst, at).Equal(prevStart)
				prevStart = src.ProcessStart(inst, at)
				if restarted && len(prev) > 0 {
					resets++
				}
				check := func(name string, v float64) {
					if math.IsNaN(v) || v < 0 {
						t.Fatalf("%v %s at %s: %v", st, name, at, v)
					}
					if p, ok := prev[name]; ok && v < p && !restarted {
						t.Fatalf("%v %s decreased at %s: %v -> %v", st, name, at, p, v)
					}
					prev[name] = v
				}
				for _, c := range counters {
					check("counter"+string(rune('0'+c)), src.Count(st, c, at))
				}
				ok := src.Count(st, expo.RequestsOK, at) + src.Count(st, expo.Errors, at) + src.Count(st, expo.Timeouts, at)
				if all := src.Count(st, expo.Requests, at); math.Abs(ok-all) > 1e-6*all+1e-9 {
					t.Fatalf("%v: ok+error+timeout %v != requests %v", st, ok, all)
				}
				for _, m := range measures {
					bounds := expo.LatencyBuckets
					cum, n, sum := src.Histogram(st, m, bounds, at)
					for j := range cum {
						if j > 0 && cum[j] < cum[j-1] || cum[j] > n*(1+1e-12) {
							t.Fatalf("%v measure %d at %s: buckets not cumulative: %v (count %v)", st, m, at, cum, n)
						}
					}
					check("count"+string(rune('0'+m)), n)
					check("sum"+string(rune('0'+m)), sum)
				}
			}
		}
	}
	if resets == 0 {
		t.Error("no restart seen; the warm-up incident should reset node-c's counters")
	}
}

// Counters are pure functions of time: the increase between two instants is the traffic integral,
// whatever was evaluated before.
func TestCountersAreTrafficIntegrals(t *testing.T) {
	s := testbed.Default(end)
	a, b := end.Add(-30*time.Hour), end.Add(-29*time.Hour)
	for _, inst := range s.Instances() {
		got := s.Requests(inst, "", "", b) - s.Requests(inst, "", "", a)
		want := s.MeanQPS(inst, "", "", a, b) * b.Sub(a).Seconds()
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s: increase %v, traffic integral %v", inst, got, want)
		}
		if again := s.Requests(inst, "", "", b) - s.Requests(inst, "", "", a); again != got {
			t.Errorf("%s: not a pure function of time: %v then %v", inst, got, again)
		}
	}
}

func TestHistogramQuantileFormula(t *testing.T) {
	bounds := []float64{0.1, 0.2, 0.4}
	cum := []float64{10, 30, 90}
	cases := []struct{ q, want float64 }{
		{0.05, 0.05}, // inside the first bucket, from 0
		{0.2, 0.15},  // rank 20: halfway through (0.1, 0.2]
		{0.9, 0.4},   // rank 90: top of the last finite bucket
		{0.95, 0.4},  // in +Inf: the highest finite bound
		{0.6, 0.3},   // rank 60: halfway through (0.2, 0.4]
		{-1, math.Inf(-1)},
	}
	for _, c := range cases {
		if got := testbed.HistogramQuantile(c.q, bounds, cum, 100); math.Abs(got-c.want) > 1e-12 && got != c.want {
			t.Errorf("q=%g: %v, want %v", c.q, got, c.want)
		}
	}
	if got := testbed.HistogramQuantile(0.5, bounds, []float64{0, 0, 0}, 0); !math.IsNaN(got) {
		t.Errorf("empty histogram: %v, want NaN", got)
	}
}

func TestBucketTruthMatchesExposedCounts(t *testing.T) {
	s := testbed.Default(end)
	in := mustIncident(t, s, testbed.ComputeSlowdown)
	from, to := mid(in).Add(-5*time.Minute), mid(in)
	// The increase of the exposed cumulative buckets gives the same quantile as the truth helper.
	c1, n1, _ := s.Histogram(testbed.E2E, in.Instance, in.Model, "", testbed.LatencyBuckets, from)
	c2, n2, _ := s.Histogram(testbed.E2E, in.Instance, in.Model, "", testbed.LatencyBuckets, to)
	for i := range c2 {
		c2[i] -= c1[i]
	}
	got := testbed.HistogramQuantile(0.99, testbed.LatencyBuckets, c2, n2-n1)
	want := s.BucketQuantile(testbed.E2E, in.Instance, in.Model, "", 0.99, from, to)
	if math.Abs(got-want) > 1e-9*want {
		t.Errorf("exposed buckets give %v, truth helper %v", got, want)
	}
	// Inside one regime the windowed and the instantaneous bucket truth agree closely.
	if at := s.BucketQuantileAt(testbed.E2E, in.Instance, in.Model, "", 0.99, to); math.Abs(at-want) > 0.01*want {
		t.Errorf("instantaneous bucket quantile %v, windowed %v", at, want)
	}
}

func TestGPUStateIsPlausible(t *testing.T) {
	s := testbed.Default(end)
	at := end.Add(-2 * 24 * time.Hour)
	for _, inst := range s.Instances() {
		for g := 0; g < s.GPUsPerInstance(); g++ {
			st := s.GPU(inst, g, at)
			if st.Lost || st.UtilRatio <= 0.1 || st.UtilRatio > 1 || st.MemUsedRatio <= 0.3 || st.MemUsedRatio >= 0.85 ||
				st.MemTotalBytes == 0 || st.PowerWatts > st.PowerLimitWatts || st.TempCelsius < 30 || st.SMClockMHz == 0 {
				t.Errorf("%s GPU %d: %+v", inst, g, st)
			}
		}
	}
	if !s.GPU("node-a:8000", 8, at).Lost || !s.GPU("nowhere:1", 0, at).Lost {
		t.Error("unknown GPUs must be reported lost")
	}
	// ECC counters are cumulative.
	if a, b := s.GPU("node-b:8000", 2, at), s.GPU("node-b:8000", 2, at.Add(24*time.Hour)); b.ECCCorrected <= a.ECCCorrected {
		t.Errorf("ECC corrected did not grow: %d -> %d", a.ECCCorrected, b.ECCCorrected)
	}
}
