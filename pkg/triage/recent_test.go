package triage

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
)

// series builds a one-minute grid ending at `to` from the values, oldest first.
func series(to time.Time, vals ...float64) ([]int64, []float64) {
	t := make([]int64, len(vals))
	for i := range vals {
		t[i] = to.Add(-time.Duration(len(vals)-1-i) * time.Minute).UnixMilli()
	}
	return t, vals
}

func flat(n int, x float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// TestRecentChange: the change point inside a short window is the first point of the trailing
// run past the segment rule (1.5× the level and its step floor above it) that reaches the
// window's end.
func TestRecentChange(t *testing.T) {
	to := time.Date(2026, 11, 23, 4, 15, 0, 0, time.UTC)
	from := to.Add(-15 * time.Minute)
	cases := []struct {
		name   string
		vals   []float64 // 30 points: the 15 minutes before the window, then the window
		ok     bool
		at     time.Time
		points int
		level  float64
	}{
		{"two minutes at 3×", append(flat(28, 0.020), 0.060, 0.060), true, to.Add(-time.Minute), 2, 0.020},
		{"one minute: a change one point old", append(flat(29, 0.020), 0.050), true, to, 1, 0.020},
		{"five minutes rising", append(flat(25, 0.020), 0.035, 0.05, 0.07, 0.08, 0.09), true, to.Add(-4 * time.Minute), 5, 0.020},
		{"nothing changed", flat(30, 0.020), false, time.Time{}, 0, 0},
		{"under the step floor (0.5 ms → 0.9 ms, under 1 ms)", append(flat(28, 0.0005), 0.0009, 0.0009), false, time.Time{}, 0, 0},
		{"a fast service's step (1 ms → 4 ms: its floor is 1 ms)", append(flat(28, 0.001), 0.004, 0.004), true, to.Add(-time.Minute), 2, 0.001},
		{"under the ratio (×1.4)", append(flat(28, 0.020), 0.028, 0.028), false, time.Time{}, 0, 0},
		{"recovered before the window's end", append(append(flat(24, 0.020), 0.06, 0.06, 0.06), 0.02, 0.02, 0.02), false, time.Time{}, 0, 0},
		{"older than the window: the window's means describe it", append(flat(12, 0.020), flat(18, 0.060)...), false, time.Time{}, 0, 0},
	}
	for _, c := range cases {
		tt, vv := series(to, c.vals...)
		at, level, now, n, ok := recentChange(tt, vv, nil, from, to, riseRatio)
		if ok != c.ok {
			t.Errorf("%s: ok %v, want %v (at %s level %g)", c.name, ok, c.ok, at, level)
			continue
		}
		if !ok {
			continue
		}
		if !at.Equal(c.at) || n != c.points || math.Abs(level-c.level) > 1e-12 || !(now > level) {
			t.Errorf("%s: at %s points %d level %g now %g, want at %s points %d level %g", c.name, at, n, level, now, c.at, c.points, c.level)
		}
	}
}

// TestRecentSpanComparesAfterTheChange: the window after a change point two minutes old holds
// the change past the segment rule where the whole 15-minute window's mean does not — what the
// triage compares with the hour before decides whether the change is seen at all.
func TestRecentSpanComparesAfterTheChange(t *testing.T) {
	to := time.Date(2026, 11, 23, 4, 15, 0, 0, time.UTC)
	from := to.Add(-15 * time.Minute)
	before := from.Add(-time.Hour)
	// 60 points of the hour before and 15 of the window at 20 ms, the last two at 80 ms.
	vals := append(flat(73, 0.020), 0.080, 0.080)
	tt, vv := series(to, vals...)
	whole := pointsPair(tt, vv, before, from, to, mean)
	if r := ratio(whole.Now, whole.Before); r >= riseRatio {
		t.Fatalf("whole window: %.2f×, the test wants a change the window's mean hides", r)
	}
	at, _, _, _, ok := recentChange(tt, vv, nil, from, to, riseRatio)
	if !ok {
		t.Fatal("no change point")
	}
	sp := recentSpan(at, time.Minute, from, to)
	if want := (Span{to.Add(-2 * time.Minute), to}); sp != want {
		t.Fatalf("span %v, want %v", sp, want)
	}
	after := pointsPair(tt, vv, sp.Start.Add(-time.Hour), sp.Start, sp.End, mean)
	if r := ratio(after.Now, after.Before); r < riseRatio || after.Now-after.Before < stepFloor(after.Before) {
		t.Errorf("after the change: %.2f× (%g → %g), want past the segment rule", r, after.Before, after.Now)
	}
	// A change point at the window's last point still leaves minWindow to compare.
	if sp := recentSpan(to, time.Minute, from, to); sp.End.Sub(sp.Start) != minWindow {
		t.Errorf("span at the end %v, want %s", sp, minWindow)
	}
}

// TestSettleRecent: a change seen at one point only is read over that point's last scrape
// interval, so its diagnosis stands whatever the cause, but on one interval of requests: at
// medium confidence at most. Two points and no direction are left as they are; a healthy answer
// says the change was found and stays under the lines.
func TestSettleRecent(t *testing.T) {
	cases := []struct {
		name           string
		points         int
		verdict        Verdict
		confidence     string
		wantConfidence string
	}{
		{"one point: high becomes medium", 1, Diagnosed, "high", "medium"},
		{"one point: medium stays", 1, Diagnosed, "medium", "medium"},
		{"one point: low stays", 1, Diagnosed, "low", "low"},
		{"two points stand", 2, Diagnosed, "high", "high"},
		{"healthy stays healthy", 1, Healthy, "high", "high"},
		{"no direction stays", 1, NoDirection, "low", "low"},
	}
	for _, c := range cases {
		rep := Report{Verdict: c.verdict, Confidence: c.confidence, Summary: "s",
			Causes: []Cause{{ID: CauseQueue, Score: 0.8, Confidence: c.confidence}}}
		settleRecent(&rep, &RecentChange{At: tEnd, Where: "m v1 on node-a:8000", Level: 0.02, Now: 0.07, Points: c.points, LastInterval: true})
		wantSummary := "s"
		if c.verdict == Healthy {
			wantSummary = "s; the time per request of m v1 on node-a:8000 stepped from 20.0 ms to 70.0 ms at " + tEnd.Format("15:04") + ", and what follows stays under the lines: watch it"
		}
		if rep.Verdict != c.verdict || rep.Confidence != c.wantConfidence || rep.Summary != wantSummary {
			t.Errorf("%s: %s (%s) %q, want %s (%s)", c.name, rep.Verdict, rep.Confidence, rep.Summary, c.verdict, c.wantConfidence)
		}
	}
}

// TestScoreGPUWentIdle: a GPU that worked through the hour before and sits at zero through the
// window, while the model's own requests fall back and its compute time rises, is gpu_idle
// before the engine's 10-minute idle condition holds; without the drop the same readings are
// "compute" (nothing measured explains it). Without a sign in the model's own requests the
// idle GPU is co-tenant evidence, not a cause.
func TestScoreGPUWentIdle(t *testing.T) {
	slowed := func(s *Subject, in *Instance) {
		s.Compute.Now, s.P95.Now, s.BaselineRatio = 0.035, 0.06, 2.4
		in.Fallback.Now = 0.6
		in.GPUUtil.Now = 0
	}
	rd := readings("", func(s *Subject, in *Instance) { slowed(s, in); in.WentIdle = []string{"6"} })
	r := Score(rd, DefaultThresholds())
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseGPUIdle || r.Causes[0].Instance != "node-a:8000" || hasCause(&r, CauseCompute) {
		t.Fatalf("went idle: %s %s: %s", r.Verdict, causeList(&r), r.Summary)
	}
	if !strings.Contains(r.Causes[0].Summary, "GPU 6 of node-a went to zero") {
		t.Errorf("summary: %s", r.Causes[0].Summary)
	}
	r = Score(readings("", slowed), DefaultThresholds())
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseCompute {
		t.Errorf("no GPU drop read: %s %s", r.Verdict, causeList(&r))
	}
	// The GPU stopped but the model's own requests show nothing: another model's GPU.
	r = Score(readings("", func(s *Subject, in *Instance) { in.WentIdle = []string{"6"} }), DefaultThresholds())
	if hasCause(&r, CauseGPUIdle) || r.Verdict != Healthy || !strings.Contains(strings.Join(r.Notices, "\n"), "co-tenant evidence, not a cause of m: GPU 6 of node-a") {
		t.Errorf("co-tenant: %s %s %v", r.Verdict, causeList(&r), r.Notices)
	}
}

// TestScoreEventCandidateAtWindowEnd: an XID at the window's end before the model's requests
// show anything is listed as a candidate with its confidence — never a diagnosis without
// evidence past its line. Asked about the model, whose requests show nothing, the answer is
// healthy with the event listed for the node's owners; asked about the GPU (its alert's link),
// the event is the subject's own and counts in full.
func TestScoreEventCandidateAtWindowEnd(t *testing.T) {
	r := Score(readings("", func(s *Subject, in *Instance) { in.XID.Now = 1 }), DefaultThresholds())
	if r.Verdict != Healthy || len(r.Causes) == 0 || r.Causes[0].ID != CauseHardware || r.Causes[0].Score >= 0.5 {
		t.Fatalf("%s %s", r.Verdict, causeList(&r))
	}
	if !strings.Contains(r.Summary, "shows in none of its requests") {
		t.Errorf("summary: %s", r.Summary)
	}
	rd := readings("", func(s *Subject, in *Instance) { in.XID.Now = 1 })
	rd.GPU = "0"
	if r = Score(rd, DefaultThresholds()); r.Verdict != Diagnosed || r.Causes[0].ID != CauseHardware || strings.Contains(r.Causes[0].Summary, "weighed half") {
		t.Errorf("GPU question: %s %s", r.Verdict, causeList(&r))
	}
}

// TestScoreMemoryPeakIsASymptom: GPU memory that climbed past its critical line in the window's
// last minutes (an upgrade that needs more memory, still warming up) barely moves the window's
// mean; where the model's service there slowed (1.15×), the peak is a symptom, so the answer
// is no direction, not healthy. Unfelt by its requests, it is a note (TestScoreStandingMemoryIsNotASymptom).
func TestScoreMemoryPeakIsASymptom(t *testing.T) {
	r := Score(readings("", func(s *Subject, in *Instance) {
		in.GPUMem.Now, in.GPUMemPeak = 0.64, 0.975
		s.Compute.Now = 1.2 * s.Compute.Before
	}), DefaultThresholds())
	if r.Verdict != NoDirection || !strings.Contains(r.Summary, "GPU memory peaked at 98 % on node-a") {
		t.Errorf("%s: %s", r.Verdict, r.Summary)
	}
	if r := Score(readings("", func(s *Subject, in *Instance) { in.GPUMemPeak = 0.9 }), DefaultThresholds()); r.Verdict != Healthy {
		t.Errorf("a peak under the critical line: %s: %s", r.Verdict, r.Summary)
	}
}

// TestStrongestChangeNamesItsSignal: of the subjects whose series stepped, the one that rose
// most is the change, and a change seen in the P95 says so in the notice.
func TestStrongestChangeNamesItsSignal(t *testing.T) {
	to := time.Date(2026, 11, 23, 4, 15, 0, 0, time.UTC)
	o := Options{From: to.Add(-15 * time.Minute), To: to}
	a, av := series(to, append(flat(27, 0.040), 0.07, 0.07, 0.07)...)
	b, bv := series(to, append(flat(27, 0.040), 0.12, 0.12, 0.12)...)
	c, cv := series(to, flat(30, 0.040)...)
	total := map[string]*engine.Series{"m v1 on a": {T: a, V: av}, "m v1 on b": {T: b, V: bv}, "m v1 on c": {T: c, V: cv}}
	rc := strongestChange(total, []string{"m v1 on a", "m v1 on b", "m v1 on c"}, o, "P95")
	if rc == nil || rc.Where != "m v1 on b" || rc.Signal != "P95" || rc.Points != 3 {
		t.Fatalf("change %+v", rc)
	}
	rc.Asked = newWindow(o.From, o.To)
	if n := recentNotice(rc, newWindow(rc.At.Add(-time.Minute), to)); !strings.Contains(n, "the P95 of m v1 on b stepped from 40.0 ms to 120.0 ms") {
		t.Errorf("notice %q", n)
	}
	if strongestChange(map[string]*engine.Series{"m v1 on c": {T: c, V: cv}}, []string{"m v1 on c"}, o, "") != nil {
		t.Error("a flat series has a change")
	}
}

// TestSegmentChange: where neither the time per request nor the P95 stepped, a step of the queue
// (or the network) held for two points is the change point; one point of a small mean is not.
func TestSegmentChange(t *testing.T) {
	to := time.Date(2026, 11, 22, 10, 24, 0, 0, time.UTC)
	o := Options{Model: "m", From: to.Add(-15 * time.Minute), To: to}
	r := &reader{o: o, rd: &Readings{}, instLbl: "instance", verLbl: "version"}
	split := func(queueTail ...float64) []engine.Series {
		tq, q := series(to, append(flat(30-len(queueTail), 0.09), queueTail...)...)
		tc, c := series(to, flat(30, 3.68)...)
		lbl := map[string]string{"instance": "node-c:8000", "version": "v1"}
		return []engine.Series{{Name: "queue", Labels: lbl, T: tq, V: q}, {Name: "compute", Labels: lbl, T: tc, V: c}}
	}
	segmentChange := func(r *reader, series []engine.Series, o Options) *RecentChange {
		times, _ := r.subjectTimes(series)
		return segmentChange(r, series, times, o)
	}
	rc := segmentChange(r, split(0.34, 0.34, 0.34, 0.34), o)
	if rc == nil || rc.Signal != "queue time per request" || rc.Points != 4 || rc.Where != "m v1 on node-c:8000" {
		t.Fatalf("queue step: %+v", rc)
	}
	if total, keys := r.subjectTimes(split(0.34, 0.34, 0.34, 0.34)); strongestChange(total, keys, o, "") != nil {
		t.Error("the total stepped too: the test no longer isolates the segment")
	}
	if rc := segmentChange(r, split(0.34), o); rc != nil {
		t.Errorf("one point past the line taken: %+v", rc)
	}
	if rc := segmentChange(r, split(), o); rc != nil {
		t.Errorf("a flat queue changed: %+v", rc)
	}

	// The floor is a share of the subject's time: a queue 2 ms → 5 ms (2.5×, 3 ms) is a change on
	// a 20 ms embedder (15 % on every request, past its floor of 2.2 ms), none on a 3.7 s
	// generation (under 5 ms).
	fast := func(compute float64, queueTail ...float64) []engine.Series {
		tq, q := series(to, append(flat(30-len(queueTail), 0.002), queueTail...)...)
		tc, c := series(to, flat(30, compute)...)
		lbl := map[string]string{"instance": "node-a:8000", "version": "v1"}
		return []engine.Series{{Name: "queue", Labels: lbl, T: tq, V: q}, {Name: "compute", Labels: lbl, T: tc, V: c}}
	}
	if rc := segmentChange(r, fast(0.020, 0.005, 0.005, 0.005), o); rc == nil || rc.Points != 3 || rc.Signal != "queue time per request" {
		t.Errorf("a 3 ms queue step on a 22 ms service: %+v", rc)
	}
	if rc := segmentChange(r, fast(3.68, 0.005, 0.005, 0.005), o); rc != nil {
		t.Errorf("a 3 ms queue step on a 3.7 s service taken: %+v", rc)
	}
	if rc := segmentChange(r, fast(0.020, 0.004, 0.004, 0.004), o); rc != nil {
		t.Errorf("a 2 ms queue step (under a tenth of 22 ms) taken: %+v", rc)
	}
}

// TestFindSmallerStepOfTheTotal: a time per request that stepped 1.3× (under the segment rule's
// 1.5×, past the decomposition's 1.2× line) is the change point when it held two points or more.
func TestFindSmallerStepOfTheTotal(t *testing.T) {
	to := time.Date(2026, 11, 23, 2, 24, 0, 0, time.UTC)
	o := Options{From: to.Add(-15 * time.Minute), To: to}
	tt, vv := series(to, append(flat(26, 0.040), 0.052, 0.052, 0.052, 0.052)...)
	total := map[string]*engine.Series{"m v1 on a": {T: tt, V: vv}}
	if rc := strongestChange(total, []string{"m v1 on a"}, o, ""); rc != nil {
		t.Fatalf("1.3× past the 1.5× line: %+v", rc)
	}
	rc := strongestChangePast(total, nil, []string{"m v1 on a"}, o, "", totalRise, segmentPoints)
	if rc == nil || rc.Points != 4 || math.Abs(rc.Now/rc.Level-1.3) > 1e-9 {
		t.Fatalf("1.3× step: %+v", rc)
	}
	tt, vv = series(to, append(flat(29, 0.040), 0.052)...)
	if rc := strongestChangePast(map[string]*engine.Series{"m v1 on a": {T: tt, V: vv}}, nil, []string{"m v1 on a"}, o, "", totalRise, segmentPoints); rc != nil {
		t.Errorf("one point taken: %+v", rc)
	}
}

// TestKVClimb: a KV cache that climbed past its critical line inside the window, from a level
// under its warning line, and stayed there to the window's end is a change point at its first
// point past the line; a cache that stood full, one that fell back, one that filled before the
// window, and a series that stops before the window's end are none.
func TestKVClimb(t *testing.T) {
	to := time.Date(2026, 11, 22, 14, 19, 0, 0, time.UTC)
	from := to.Add(-15 * time.Minute)
	th := DefaultThresholds()
	low := flat(28, 0.46)
	cases := []struct {
		name   string
		vals   []float64
		end    time.Time // the series' last point
		ok     bool
		points int
	}{
		{"filled in the last minute", append(low, 1.0), to, true, 1},
		{"filled two minutes ago", append(low[:27], 0.95, 1.0), to, true, 2},
		{"stood full", append(flat(28, 0.9), 1.0), to, false, 0},
		{"fell back", append(low[:27], 1.0, 0.6), to, false, 0},
		{"under the critical line", append(low, 0.91), to, false, 0},
		{"full since before the window", append(flat(10, 0.4), flat(19, 0.99)...), to, false, 0},
		{"the series stops early", append(low, 1.0), to.Add(-2 * time.Minute), false, 0},
	}
	for _, c := range cases {
		ts, vs := series(c.end, c.vals...)
		at, level, now, n, ok := kvClimb(ts, vs, from, to, time.Minute, th)
		if ok != c.ok || n != c.points {
			t.Errorf("%s: ok %v with %d points, want %v with %d", c.name, ok, n, c.ok, c.points)
			continue
		}
		if ok {
			first := c.end.Add(-time.Duration(c.points-1) * time.Minute)
			if !at.Equal(first) || math.Abs(level-0.46) > 1e-9 || now < th.KVCacheCrit {
				t.Errorf("%s: at %s level %g now %g, want %s from 0.46", c.name, at, level, now, first)
			}
		}
	}
}
