package gate

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
)

// The test bed's canaries (pkg/testbed doc): recsys-ranker v1.5.0 serves 25 % of node-c's traffic
// from end−4h with queue and compute ×1.15; text-embedder v2.2.0 serves 20 % of node-c's traffic
// all along, 2 % faster. The mean latency over the window is exact (histogram sum/count), so its
// change is held to the scaling ±0.001. The P95 is what histogram_quantile gives over the custom
// profile's coarse buckets (10, 25, 50 ms…), whose linear interpolation moves it well away from
// the continuous ratio (recsys: 24.5 → 31.8 ms straddles the 25 ms bucket edge): its truth is the
// scenario's BucketQuantile on node-c, held to ±0.005.
const (
	meanTol = 0.001
	p95Tol  = 0.005
)

func check(t *testing.T, r *Report, name string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %s in %+v", name, r.Checks)
	return Check{}
}

// truthP95Change is the change histogram_quantile shows over a 5-minute window ending at at.
func truthP95Change(s *testbed.Scenario, model, base, canary string, at time.Time) float64 {
	in := s.CanaryInstance(model)
	q := func(v string) float64 {
		return s.BucketQuantile(testbed.E2E, in, model, v, 0.95, at.Add(-5*time.Minute), at)
	}
	return q(canary)/q(base) - 1
}

func TestGateOnTestbed(t *testing.T) { enginetest.EachStore(t, testGateOnTestbed) }

func testGateOnTestbed(t *testing.T, store enginetest.Option) {
	e, s := enginetest.Start(t, store)
	end := testbed.DefaultEnd
	ctx := context.Background()

	t.Run("slower canary fails", func(t *testing.T) {
		r, err := Evaluate(ctx, e, Options{Model: "recsys-ranker", Baseline: "v1.4.0", Canary: "v1.5.0", At: end})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != Fail {
			t.Fatalf("verdict %s: %+v", r.Verdict, r)
		}
		lc := check(t, r, CheckLatency)
		want := truthP95Change(s, "recsys-ranker", "v1.4.0", "v1.5.0", end.Add(-time.Hour))
		t.Logf("P95 change %.4f (bucket truth %.4f), baseline %.5f canary %.5f; %s", *lc.Change, want, *lc.Baseline, *lc.Canary, lc.Reason)
		if math.Abs(*lc.Change-want) > p95Tol || *lc.Passed {
			t.Fatalf("P95 check %s, want change %.3f ± %.2f and failed", lc.Reason, want, p95Tol)
		}
		ml := check(t, r, CheckMeanLatency)
		t.Logf("mean change %.5f; %s", *ml.Change, ml.Reason)
		if math.Abs(*ml.Change-0.15) > meanTol || *ml.Passed {
			t.Fatalf("mean check %s, want change 0.15 ± %g and failed", ml.Reason, meanTol)
		}
		tr := check(t, r, CheckTraffic)
		// Canary: 25 % of node-c's recsys traffic; baseline the other 75 % on node-c.
		wantCanary := s.MeanQPS("node-c:8000", "recsys-ranker", "v1.5.0", end.Add(-2*time.Hour), end) * 7200
		t.Logf("requests baseline %.0f canary %.0f (truth canary %.0f)", *tr.Baseline, *tr.Canary, wantCanary)
		// Sum of per-minute 5-minute rates × 60 s against the served total: the rates lag by half
		// their window while traffic climbs towards the 16:00 peak (−0.4 % here); ±1 %.
		if math.Abs(*tr.Canary/wantCanary-1) > 0.01 {
			t.Fatalf("canary requests %.0f, truth %.0f", *tr.Canary, wantCanary)
		}
		if mc := check(t, r, CheckMemory); mc.Passed != nil || !strings.Contains(mc.Reason, "node-c:8000") {
			t.Fatalf("memory check %+v", mc)
		}
		cc := check(t, r, CheckConfidence)
		if cc.Baseline == nil || math.Abs(*cc.Baseline-0.86) > 0.005 || math.Abs(*cc.Canary-0.84) > 0.005 {
			t.Fatalf("confidence check %+v", cc)
		}
	})

	t.Run("faster canary passes", func(t *testing.T) {
		r, err := Evaluate(ctx, e, Options{Model: "text-embedder", Baseline: "v2.1.0", Canary: "v2.2.0", At: end})
		if err != nil {
			t.Fatal(err)
		}
		lc := check(t, r, CheckLatency)
		want := truthP95Change(s, "text-embedder", "v2.1.0", "v2.2.0", end.Add(-time.Hour))
		ml := check(t, r, CheckMeanLatency)
		t.Logf("P95 change %.4f (bucket truth %.4f), mean change %.5f", *lc.Change, want, *ml.Change)
		if r.Verdict != Pass || math.Abs(*lc.Change-want) > p95Tol || math.Abs(*ml.Change+0.02) > meanTol {
			t.Fatalf("verdict %s, P95 %s, mean %s", r.Verdict, lc.Reason, ml.Reason)
		}
	})

	t.Run("the threshold is configurable", func(t *testing.T) {
		// The comparison reversed: v2.1.0 as the "canary" is 1/0.98 − 1 = 2.04 % slower on the mean.
		r, err := Evaluate(ctx, e, Options{Model: "text-embedder", Baseline: "v2.2.0", Canary: "v2.1.0", At: end, LatencyThreshold: 0.015})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != Fail {
			t.Fatalf("verdict %s: %+v", r.Verdict, r.Checks)
		}
	})

	t.Run("before the canary started", func(t *testing.T) {
		at := end.Add(-4 * time.Hour)
		r, err := Evaluate(ctx, e, Options{Model: "recsys-ranker", Baseline: "v1.4.0", Canary: "v1.5.0", At: at})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != InsufficientData {
			t.Fatalf("verdict %s: %+v", r.Verdict, r.Checks)
		}
		if tr := check(t, r, CheckTraffic); !tr.Insufficient {
			t.Fatalf("traffic check %+v", tr)
		}
	})

	t.Run("too little canary traffic", func(t *testing.T) {
		// 10 minutes after the deploy: plenty of requests, too few latency points for minPoints 30.
		at := end.Add(-4*time.Hour + 10*time.Minute)
		r, err := Evaluate(ctx, e, Options{Model: "recsys-ranker", Baseline: "v1.4.0", Canary: "v1.5.0", At: at, Window: 10 * time.Minute, MinPoints: 30})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != InsufficientData || !check(t, r, CheckLatency).Insufficient {
			t.Fatalf("verdict %s: %+v", r.Verdict, r.Checks)
		}
	})

	t.Run("unknown version", func(t *testing.T) {
		r, err := Evaluate(ctx, e, Options{Model: "recsys-ranker", Baseline: "v1.4.0", Canary: "v9", At: end})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != InsufficientData {
			t.Fatalf("verdict %s", r.Verdict)
		}
	})
}

// TestGateTriton: Triton exports µs counters, no percentiles: the per-minute means take the P95's
// place and the window mean is duration / successful requests, exactly ×1.15 for the recsys canary.
func TestGateTriton(t *testing.T) {
	e, _ := enginetest.Start(t, enginetest.Profile("triton"))
	r, err := Evaluate(context.Background(), e, Options{Model: "recsys-ranker", Baseline: "v1.4.0", Canary: "v1.5.0", At: testbed.DefaultEnd})
	if err != nil {
		t.Fatal(err)
	}
	ml, mm := check(t, r, CheckMeanLatency), check(t, r, CheckMinuteMean)
	if r.Verdict != Fail || ml.Change == nil || math.Abs(*ml.Change-0.15) > meanTol || mm.Change == nil || math.Abs(*mm.Change-0.15) > meanTol {
		t.Fatalf("verdict %s, window mean %s, minute means %s", r.Verdict, ml.Reason, mm.Reason)
	}
	if cc := check(t, r, CheckConfidence); cc.Passed != nil || !strings.Contains(cc.Reason, "Triton") {
		t.Fatalf("confidence %+v", cc)
	}
}
