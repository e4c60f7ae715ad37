package triage

import (
	"math"
	"strings"
	"testing"
	"time"
)

// Regression tests of issue 13's triage symptoms, built from readings (pure scoring).

func seg(t *testing.T, r *Report, name string) SegmentChange {
	t.Helper()
	for _, s := range r.Segments {
		if s.Segment == name {
			return s
		}
	}
	t.Fatalf("no segment %s in %+v", name, r.Segments)
	return SegmentChange{}
}

func hasCause(r *Report, id string) bool {
	for _, c := range r.Causes {
		if c.ID == id {
			return true
		}
	}
	return false
}

// TestScoreStableQueueSurgeBesideCanary (symptom 1): the stable version's queue surges on the
// instance where a canary deployed 2 hours ago takes a fifth of the traffic (the instance's
// traffic 1.35× the hour before: under the surge line, the queue is the batching's). The queue leads
// the decomposition and ranks first; the stable version is not "slower than the canary" (it is
// not new), and the canary, no slower in compute than the version it joined, is not blamed.
func TestScoreStableQueueSurgeBesideCanary(t *testing.T) {
	rd := readings("", func(s *Subject, in *Instance) {
		s.Queue.Now, s.QPS.Now, in.QPS.Now, in.QueueDepth.Now = 0.032, 110, 135, 5
		s.P95.Now, s.BaselineRatio, s.Jitter.Now = 0.09, 3.6, 6.7
	})
	canary := steady("node-a:8000", "v2")
	canary.QPS = Pair{25, 25}
	rd.Subjects = append(rd.Subjects, canary)
	rd.Deploys, rd.DeploysRead = []Deploy{{Instance: "node-a:8000", Version: "v2", At: tFrom.Add(-2 * time.Hour)}}, true
	r := Score(rd, DefaultThresholds())
	t.Logf("%s: %s; %s", r.Verdict, causeList(&r), r.Summary)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseQueue || r.Causes[0].Instance != "node-a:8000" || r.Causes[0].Version != "v1" {
		t.Fatalf("want queue first on v1 node-a: %s", causeList(&r))
	}
	if hasCause(&r, CauseModelRegression) {
		t.Errorf("a version regression is named: %s", causeList(&r))
	}
	if r.Lead != SegQueue || !strings.Contains(r.SegmentsOf, "v1 on node-a:8000") {
		t.Errorf("lead %q of %q", r.Lead, r.SegmentsOf)
	}
	q := seg(t, &r, SegQueue)
	// The queue holds the whole change: 28.4 ms of 28.4 ms.
	if q.Share == nil || math.Abs(*q.Share-1) > 1e-9 || math.Abs(val(q.Change)-0.0284) > 1e-9 {
		t.Errorf("queue segment %+v", q)
	}
	// Asked about the canary: it is not slower than v1 in compute, so no regression.
	rd.Version = "v2"
	if r := Score(rd, DefaultThresholds()); hasCause(&r, CauseModelRegression) {
		t.Errorf("canary: %s %s", r.Verdict, causeList(&r))
	}
}

// inPlace upgrades both instances from v1 to v2 inside the window: v1 has no "now", v2 no
// "before" and no 7-day baseline; node-a's v2 needs more memory than the GPU has (×4 compute,
// memory 97 %).
func inPlace(deploys bool) *Readings {
	rd := &Readings{Model: "m", Window: Span{tFrom, tEnd}, Before: Span{tFrom.Add(-time.Hour), tFrom}}
	for _, n := range []string{"node-a:8000", "node-b:8000"} {
		old, nu := steady(n, "v1"), steady(n, "v2")
		for _, p := range []*Pair{&old.QPS, &old.P50, &old.P95, &old.P99, &old.Jitter, &old.Queue, &old.Compute, &old.Network, &old.ErrorRatio, &old.TimeoutRatio} {
			p.Now = math.NaN()
		}
		for _, p := range []*Pair{&nu.QPS, &nu.P50, &nu.P95, &nu.P99, &nu.Jitter, &nu.Queue, &nu.Compute, &nu.Network, &nu.ErrorRatio, &nu.TimeoutRatio} {
			p.Before = math.NaN()
		}
		old.BaselineRatio, nu.BaselineRatio = math.NaN(), math.NaN()
		in := calm(n)
		if n == "node-a:8000" {
			nu.Compute.Now, nu.P95.Now, nu.P99.Now = 0.05, 0.12, 0.3
			in.GPUMem, in.GPUMemPeak = Pair{0.8, 0.97}, 0.99
		}
		rd.Subjects = append(rd.Subjects, old, nu)
		rd.Instances = append(rd.Instances, in)
		if deploys {
			rd.Deploys = append(rd.Deploys, Deploy{Instance: n, Version: "v2", At: tFrom.Add(time.Minute)})
		}
	}
	rd.DeploysRead = deploys
	return rd
}

// TestScoreInPlaceUpgradeMemoryCliff (symptom 2, the brief's headline case): an in-place upgrade
// whose new version swaps on node-a is compared as the model before (v1) vs the model now (v2)
// on the same instance: compute leads, the deploy comes first among compute's candidates with
// the memory pressure behind it, and node-b (upgraded, fine) is not blamed. Found from the
// deploy events, and from the readings alone (v2 has traffic now and none before, v1 had).
func TestScoreInPlaceUpgradeMemoryCliff(t *testing.T) {
	for _, v := range []struct{ deploys, restart bool }{{true, false}, {false, false}, {true, true}} {
		rd := inPlace(v.deploys)
		if v.restart {
			// The upgrade restarted the process: 3 minutes of warm-up in the window. The service
			// readings leave the warm-up out, so the version's slowdown is not the warm-up's.
			rd.Instances[0].Warmup = []Warmup{{Start: tFrom, End: tFrom.Add(3 * time.Minute), Reason: "process restarted"}}
		}
		// A reading without a version label (TorchServe's error counters) is no version the
		// deploy replaced.
		errs := Subject{Instance: "node-a:8000", QPS: nanPair(), P50: nanPair(), P95: nanPair(), P99: nanPair(), Jitter: nanPair(), P95Raw: nanPair(),
			BaselineRatio: math.NaN(), Queue: nanPair(), Compute: nanPair(), Network: nanPair(), Prefill: nanPair(), Decode: nanPair(),
			ErrorRatio: Pair{0.001, 0.001}, TimeoutRatio: nanPair()}
		rd.Subjects = append(rd.Subjects, errs)
		r := Score(rd, DefaultThresholds())
		t.Logf("%+v: %s: %s; %s", v, r.Verdict, causeList(&r), r.Summary)
		if r.Verdict != Diagnosed || r.Causes[0].ID != CauseModelRegression || r.Causes[0].Instance != "node-a:8000" || r.Causes[0].Version != "v2" {
			t.Fatalf("want model_regression of v2 on node-a first: %s", causeList(&r))
		}
		if !strings.Contains(r.Causes[0].Summary, "than v1 on the same instance") {
			t.Errorf("summary %q: want the version replaced, v1", r.Causes[0].Summary)
		}
		if c := cause(t, &r, CauseComputeMemory); c.Score >= r.Causes[0].Score || c.Score < DefaultThresholds().DiagnosedScore {
			t.Errorf("compute_memory %.3f: want diagnosed, below the deploy", c.Score)
		}
		e := evidence(t, r.Causes[0], "mean compute time")
		if math.Abs(val(e.Before)-0.0124) > 1e-9 || math.Abs(val(e.Now)-0.05) > 1e-9 {
			t.Errorf("compute evidence %v → %v, want v1's 12.4 ms before → v2's 50 ms", val(e.Before), val(e.Now))
		}
		if r.Lead != SegCompute || !strings.Contains(r.SegmentsOf, "v2 on node-a:8000") {
			t.Errorf("lead %q of %q", r.Lead, r.SegmentsOf)
		}
		if c := seg(t, &r, SegCompute); math.Abs(val(c.Share)-1) > 1e-9 {
			t.Errorf("compute share %v", val(c.Share))
		}
	}
}

// TestScoreUpgradeMemoryBeforeItsLatency: the same headline case asked minutes after the deploy,
// when the new version's samples are still the warm-up's (dropped) and only the memory speaks:
// the node's fullest GPU at 97.6 % at the window's end, 75 % in the hour before, and v2 deployed
// on node-a 3 minutes before the end. The version is the change that came with the memory: a
// regression of v2, diagnosed; also where the hour before stood at 88 %, past the warning line
// (an earlier incident on the node), since the memory climbed from there. Not without the deploy
// (a restart alone: no direction), not with the memory under its critical line at the end (a load
// that peaked on its way), not where it stood past the critical line before the deploy or rose
// less than 5 points, not on a server judged by its KV cache.
func TestScoreUpgradeMemoryBeforeItsLatency(t *testing.T) {
	upgrade := func(mutate func(rd *Readings, in *Instance)) Report {
		rd := readings("", func(_ *Subject, in *Instance) {
			in.GPUMem, in.GPUMemPeak, in.GPUMemLast = Pair{0.75, 0.78}, 0.976, 0.976
			in.Warmup = []Warmup{{Start: tEnd.Add(-4 * time.Minute), End: tEnd.Add(-2 * time.Minute), Reason: "process restarted"}}
		})
		rd.Deploys, rd.DeploysRead = []Deploy{{Instance: "node-a:8000", Version: "v2", At: tEnd.Add(-3 * time.Minute)}}, true
		if mutate != nil {
			mutate(rd, &rd.Instances[0])
		}
		return Score(rd, DefaultThresholds())
	}
	r := upgrade(nil)
	t.Logf("%s: %s; %s", r.Verdict, causeList(&r), r.Summary)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseModelRegression || r.Causes[0].Version != "v2" || r.Causes[0].Instance != "node-a:8000" ||
		!strings.Contains(r.Causes[0].Summary, "needs more GPU memory than was free: since its deploy node-a is at 97.6 %") {
		t.Fatalf("want v2's regression on node-a: %s %s", r.Verdict, causeList(&r))
	}
	if r := upgrade(func(_ *Readings, in *Instance) { in.GPUMem.Before = 0.88 }); r.Verdict != Diagnosed || r.Causes[0].ID != CauseModelRegression {
		t.Errorf("from 88 %% before: %s %s", r.Verdict, causeList(&r))
	}
	for name, mutate := range map[string]func(rd *Readings, in *Instance){
		"a restart, no deploy":      func(rd *Readings, _ *Instance) { rd.Deploys = nil },
		"a deploy days ago":         func(rd *Readings, _ *Instance) { rd.Deploys[0].At = tFrom.Add(-6 * time.Hour) },
		"under the line at the end": func(_ *Readings, in *Instance) { in.GPUMemLast = 0.84 },
		"past the critical before":  func(_ *Readings, in *Instance) { in.GPUMem.Before = 0.93 },
		"up less than 5 points":     func(_ *Readings, in *Instance) { in.GPUMem.Before, in.GPUMemLast = 0.9, 0.93 },
		"judged by its KV cache":    func(_ *Readings, in *Instance) { in.KVCache = Pair{0.5, 0.5} },
		"another instance's deploy": func(rd *Readings, _ *Instance) { rd.Deploys[0].Instance = "node-b:8000" },
	} {
		if r := upgrade(mutate); len(r.Causes) > 0 && r.Causes[0].ID == CauseModelRegression && strings.Contains(r.Causes[0].Summary, "needs more GPU memory") {
			t.Errorf("%s: %s %s", name, r.Verdict, causeList(&r))
		}
	}
}

// TestScoreComputeWithoutMemoryData (symptom 3): compute ×3.6 with the queue flat and no GPU
// memory data is the compute segment's diagnosis, "compute", not no direction; the report says
// what was not measured.
func TestScoreComputeWithoutMemoryData(t *testing.T) {
	rd := readings("", func(s *Subject, in *Instance) {
		s.Compute.Now, s.P95.Now, s.BaselineRatio = 0.0446, 0.08, 3.2
		in.GPUMem, in.GPUUtil, in.GPUMemPeak = nanPair(), nanPair(), math.NaN()
	})
	rd.Instances[1].GPUMem, rd.Instances[1].GPUUtil = nanPair(), nanPair()
	r := Score(rd, DefaultThresholds())
	t.Logf("%s: %s; %s; not measured %q", r.Verdict, causeList(&r), r.Summary, r.NotMeasured)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseCompute || r.Causes[0].Instance != "node-a:8000" {
		t.Fatalf("want compute first: %s", causeList(&r))
	}
	if !strings.Contains(r.Causes[0].Summary, "the cause is not among the signals measured here") || !strings.Contains(r.Causes[0].Summary, "not measured: memory") {
		t.Errorf("summary %q", r.Causes[0].Summary)
	}
	if r.Lead != SegCompute || !strings.Contains(strings.Join(r.NotMeasured, "\n"), "GPU memory") {
		t.Errorf("lead %q, not measured %q", r.Lead, r.NotMeasured)
	}
	// With memory data past its line the same rise is compute_memory.
	rd.Instances[0].GPUMem, rd.Instances[0].GPUMemPeak = Pair{0.8, 0.94}, 0.95
	if r := Score(rd, DefaultThresholds()); r.Causes[0].ID != CauseComputeMemory || hasCause(&r, CauseCompute) {
		t.Errorf("with memory: %s", causeList(&r))
	}
	// Compute 1.45× (under its own 1.5× line) holding the whole rise of a total that grew past
	// its line (1.2× and 5 ms) still leads the change: "compute", not no direction.
	rd = readings("", func(s *Subject, in *Instance) { s.Compute.Now, s.P95.Now, s.BaselineRatio = 0.018, 0.032, 1.3 })
	rd.Subjects[0].Compute.Before = 0.0124
	if r := Score(rd, DefaultThresholds()); r.Verdict != Diagnosed || r.Causes[0].ID != CauseCompute || r.Lead != SegCompute {
		t.Errorf("compute 1.45× leading: %s %s lead %q", r.Verdict, causeList(&r), r.Lead)
	}
}

// TestScoreIdleGPUOfAnotherModel (symptom 5): in a model question, a GPU of the node that sits
// idle while the model's own requests show nothing (it serves another model) is co-tenant
// evidence in the notices, never the model's cause; the model's own incident ranks first.
func TestScoreIdleGPUOfAnotherModel(t *testing.T) {
	rd := readings("", func(_ *Subject, in *Instance) { in.IdleGPUs, in.GPUUtil.Now = []string{"6"}, 0 })
	s := &rd.Subjects[1] // node-b's queue surges
	s.Queue.Now, s.P95.Now, s.BaselineRatio, s.Jitter.Now = 0.032, 0.09, 3.6, 6.7
	rd.Instances[1].QueueDepth.Now = 5
	r := Score(rd, DefaultThresholds())
	t.Logf("%s: %s; notices %q", r.Verdict, causeList(&r), r.Notices)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseQueue || r.Causes[0].Instance != "node-b:8000" {
		t.Fatalf("want queue on node-b first: %s", causeList(&r))
	}
	if hasCause(&r, CauseGPUIdle) {
		t.Errorf("the other model's idle GPU is a cause: %s", causeList(&r))
	}
	if !strings.Contains(strings.Join(r.Notices, "\n"), "co-tenant evidence, not a cause of m: GPU 6 of node-a") {
		t.Errorf("notices %q", r.Notices)
	}
}

// TestScoreHardwareOfAnotherModel: uncorrected ECC errors on node-a that the model's own
// requests there show no sign of leave a model without symptoms healthy, the event listed for
// the node's owners; the same event under the model's own slowdown is still a candidate, and
// where its requests show it (a slower service) it counts in full.
func TestScoreHardwareOfAnotherModel(t *testing.T) {
	ecc := func(in *Instance) { in.ECCUncorrected = Pair{0, 2} }
	rd := readings("", func(_ *Subject, in *Instance) { ecc(in) })
	r := Score(rd, DefaultThresholds())
	t.Logf("quiet model: %s: %s; %s", r.Verdict, causeList(&r), r.Summary)
	if r.Verdict != Healthy || !hasCause(&r, CauseHardware) || !strings.Contains(r.Summary, "shows in none of its requests") {
		t.Errorf("want healthy with the ECC event listed: %s %s", r.Verdict, causeList(&r))
	}
	rd = readings("", func(s *Subject, in *Instance) {
		ecc(in)
		s.Compute.Now, s.P95.Now, s.BaselineRatio = 0.055, 0.3, 12
	})
	r = Score(rd, DefaultThresholds())
	t.Logf("own slowdown: %s: %s", r.Verdict, causeList(&r))
	if r.Verdict == Healthy {
		t.Errorf("a slowdown with an ECC event read healthy: %s", causeList(&r))
	}
	if c := cause(t, &r, CauseHardware); strings.Contains(c.Summary, "weighed half") {
		t.Errorf("the model's own slowdown shows the event, yet it is weighed half: %q", c.Summary)
	}

	// An XID on node-a while the instance's errors doubled: the model's own sign where the error
	// counter is the model's, every model's on the instance where it carries no model
	// (TorchServe's Requests5XX): there another model's failing GPU is no sign of this model's.
	xidErrors := func(hostWide bool) Report {
		rd := readings("", func(s *Subject, in *Instance) {
			in.XID = Pair{0, 1}
			s.ErrorRatio = Pair{0.004, 0.02}
		})
		rd.ErrorsOfInstance = hostWide
		return Score(rd, DefaultThresholds())
	}
	if c := cause(t, ptr(xidErrors(false)), CauseHardware); strings.Contains(c.Summary, "weighed half") {
		t.Errorf("the model's own errors doubled, yet the XID is weighed half: %q", c.Summary)
	}
	if c := cause(t, ptr(xidErrors(true)), CauseHardware); !strings.Contains(c.Summary, "weighed half") {
		t.Errorf("host-wide errors counted as the model's own sign: %q", c.Summary)
	}
}

func ptr[T any](x T) *T { return &x }

// TestScoreChangeInAShareOfTheRequests: a fifth of the requests carry inputs four times longer.
// The P95 rises 1.6× while the mean compute grows 3 ms (1.25×): under the total's 5 ms line, so
// before, nothing led and the input shift stayed a weak candidate. The P95's rise stands for the
// total's, compute holds the mean's rise and leads, and the input shift explains it. A P95 that
// rose while the mean stood still (one slow request in a quiet window) leads nothing.
func TestScoreChangeInAShareOfTheRequests(t *testing.T) {
	share := func(compute float64) Report {
		return Score(readings("", func(s *Subject, in *Instance) {
			s.Compute.Now, s.P95.Now, in.InputMean.Now = compute, 0.04, 320
		}), DefaultThresholds())
	}
	r := share(0.0155)
	t.Logf("share: %s %s lead %q: %s", r.Verdict, causeList(&r), r.Lead, r.Summary)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseInputShift || r.Lead != SegCompute {
		t.Errorf("want input_shift first under a compute lead: %s lead %q", causeList(&r), r.Lead)
	}
	r = share(0.0125)
	t.Logf("mean still: %s %s lead %q", r.Verdict, causeList(&r), r.Lead)
	if r.Lead != "" || r.Verdict == Diagnosed {
		t.Errorf("a P95 without the mean's rise led %q: %s %s", r.Lead, r.Verdict, causeList(&r))
	}
	// The hour before held a higher P95 (32 ms: the daily peak, or the change's first minutes),
	// so the P95 reads 1.31× the hour before, under the line; against its baseline, as the P1
	// alert reads it, it is 1.59×. It still leads (corpus seed 3, custom-35: no direction before).
	byBaseline := func(baseline float64) Report {
		return Score(readings("", func(s *Subject, in *Instance) {
			s.Compute.Now, s.P95.Before, s.P95.Now, s.BaselineRatio, in.InputMean.Now = 0.0155, 0.032, 0.042, baseline, 330
		}), DefaultThresholds())
	}
	r = byBaseline(1.59)
	t.Logf("against the baseline: %s %s lead %q", r.Verdict, causeList(&r), r.Lead)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseInputShift || r.Lead != SegCompute {
		t.Errorf("want input_shift first under a compute lead read against the baseline: %s %s lead %q", r.Verdict, causeList(&r), r.Lead)
	}
	if r = byBaseline(1.3); r.Lead != "" || r.Verdict == Diagnosed {
		t.Errorf("a P95 under the line against both references led %q: %s %s", r.Lead, r.Verdict, causeList(&r))
	}
}

// TestScoreFasterNewVersionIsNoCause: a version deployed in the window and 5 % faster than the
// one it replaced is not a cause (a control of the corpus: healthy).
func TestScoreFasterNewVersionIsNoCause(t *testing.T) {
	rd := inPlace(true)
	for i := range rd.Subjects {
		if rd.Subjects[i].Version == "v2" {
			rd.Subjects[i].Compute.Now, rd.Subjects[i].P95.Now, rd.Subjects[i].P99.Now = 0.0118, 0.024, 0.03
		}
	}
	rd.Instances[0].GPUMem, rd.Instances[0].GPUMemPeak = Pair{0.6, 0.6}, 0.6
	r := Score(rd, DefaultThresholds())
	if r.Verdict != Healthy || len(r.Causes) > 0 && r.Causes[0].Score >= 0.2 {
		t.Fatalf("%s: %s; %s", r.Verdict, causeList(&r), r.Summary)
	}
}

// TestChangePoints: in a 24-hour series at a steady 20 ms with a 30-minute step to 60 ms and a
// single-point spike, the step is one change point and the spike none; two steps 5 minutes apart
// merge into one episode, which is triaged from one step before its first point.
func TestChangePoints(t *testing.T) {
	from := tEnd.Add(-24 * time.Hour)
	step := 2 * time.Minute
	var ts []int64
	var v []float64
	for at := from.Add(step); !at.After(tEnd); at = at.Add(step) {
		x := 0.02
		switch {
		case !at.Before(tEnd.Add(-8*time.Hour)) && at.Before(tEnd.Add(-8*time.Hour+30*time.Minute)):
			x = 0.06
		case at.Equal(tEnd.Add(-3 * time.Hour)):
			x = 0.5
		}
		ts, v = append(ts, at.UnixMilli()), append(v, x)
	}
	cs := changePoints(ts, v, from, tEnd, "m on a")
	if len(cs) != 1 || !cs[0].Start.Equal(tEnd.Add(-8*time.Hour)) || !cs[0].End.Equal(tEnd.Add(-8*time.Hour+28*time.Minute)) || cs[0].peak != 3 {
		t.Fatalf("change points %+v", cs)
	}
	sp := episodeSpan(cs[0], step, from, tEnd)
	if !sp.Start.Equal(tEnd.Add(-8*time.Hour-step)) || sp.End.Sub(sp.Start) != episodeWindow {
		t.Errorf("episode span %v–%v", sp.Start, sp.End)
	}
	later := change{Span: Span{cs[0].End.Add(5 * time.Minute), cs[0].End.Add(20 * time.Minute)}, peak: 5, where: "m on b"}
	if m := mergeChanges([]change{later, cs[0]}); len(m) != 1 || m[0].where != "m on b" || !m[0].End.Equal(later.End) {
		t.Errorf("merged %+v", m)
	}
}

// TestScoreLostCapacityIsQueue: node-b stops serving and node-a takes its traffic (×2 there,
// node-b's 100 req/s gone): the queue node-a builds is lost capacity — queue first, named on
// node-b (the instance that stopped: no load state is read, its traffic is gone), the moved
// traffic not a surge.
func TestScoreLostCapacityIsQueue(t *testing.T) {
	rd := readings("", func(s *Subject, in *Instance) {
		s.QPS.Now, in.QPS.Now, in.QueueDepth.Now = 200, 200, 4
		s.Queue.Now, s.P95.Now, s.BaselineRatio, s.Jitter.Now = 0.02, 0.06, 2.4, 4
	})
	rd.Instances[1].QPS.Now, rd.Subjects[1].QPS.Now = math.NaN(), math.NaN()
	for _, p := range []*Pair{&rd.Subjects[1].Queue, &rd.Subjects[1].Compute, &rd.Subjects[1].Network, &rd.Subjects[1].P95} {
		p.Now = math.NaN()
	}
	r := Score(rd, DefaultThresholds())
	t.Logf("%s: %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseQueue || r.Causes[0].Instance != "node-b:8000" ||
		!strings.Contains(r.Causes[0].Summary, "drained or stopped serving") || !strings.Contains(r.Causes[0].Summary, "lost capacity") {
		t.Fatalf("want queue (lost capacity) first on node-b: %s %v", causeList(&r), r.Summary)
	}
	if c := cause(t, &r, CauseTrafficSurge); c.Score >= DefaultThresholds().DiagnosedScore || !strings.Contains(c.Summary, "lost capacity") {
		t.Errorf("traffic_surge %.3f: %q", c.Score, c.Summary)
	}
	// The same queue with node-b still serving its share is a surge's.
	rd.Instances[1].QPS.Now = 100
	if r := Score(rd, DefaultThresholds()); cause(t, &r, CauseTrafficSurge).Score < 0.5 {
		t.Errorf("a real surge: %s", causeList(&r))
	}
}

// TestScoreDeployWarmupIsHealthy: a deploy replaces v1 by v2 in place, same speed, with its
// restart's warm-up in the window: the warm-up is the deploy's, expected — healthy (a control of
// the corpus); the same warm-up without a deploy is the warmup cause.
func TestScoreDeployWarmupIsHealthy(t *testing.T) {
	rd := inPlace(true)
	for i := range rd.Subjects {
		if rd.Subjects[i].Version == "v2" && rd.Subjects[i].Instance == "node-a:8000" {
			rd.Subjects[i].Compute.Now, rd.Subjects[i].P95.Now, rd.Subjects[i].P99.Now = 0.0124, 0.025, 0.03
		}
	}
	rd.Instances[0].GPUMem, rd.Instances[0].GPUMemPeak = Pair{0.6, 0.6}, 0.6
	for i := range rd.Instances {
		rd.Instances[i].Warmup = []Warmup{{Start: tFrom.Add(time.Minute), End: tFrom.Add(4 * time.Minute), Reason: "first appearance"}}
	}
	r := Score(rd, DefaultThresholds())
	t.Logf("%s: %s; %s", r.Verdict, causeList(&r), r.Summary)
	if r.Verdict != Healthy || !strings.Contains(cause(t, &r, CauseWarmup).Summary, "the warm-up of the deploy of v2") {
		t.Fatalf("deploy: %s %s", r.Verdict, causeList(&r))
	}
	plain := readings("", nil)
	plain.Instances[0].Warmup = rd.Instances[0].Warmup
	if r := Score(plain, DefaultThresholds()); r.Verdict != Diagnosed || r.Causes[0].ID != CauseWarmup {
		t.Errorf("restart without a deploy: %s %s", r.Verdict, causeList(&r))
	}
}

// TestScoreComputeCandidatesExplainTheirRise: inputs twice as long make compute ×2 and the queue
// grow more than compute (a slower service near saturation): the input shift explains it, not the
// queue; clock throttling with compute ×2 is hardware, not "compute".
func TestScoreComputeCandidatesExplainTheirRise(t *testing.T) {
	r := Score(readings("", func(s *Subject, in *Instance) {
		in.InputMean.Now = 400
		s.Compute.Now, s.Queue.Now, in.QueueDepth.Now = 0.0248, 0.04, 4
		s.P95.Now, s.BaselineRatio, s.Jitter.Now = 0.12, 4.8, 5.5
	}), DefaultThresholds())
	t.Logf("input: %s: %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseInputShift {
		t.Errorf("input shift: want input_shift first, got %s", causeList(&r))
	}
	r = Score(readings("", func(s *Subject, in *Instance) {
		in.Throttle, in.ThrottleMeasured = []string{"hw_thermal_slowdown"}, true
		s.Compute.Now, s.P95.Now, s.BaselineRatio = 0.0248, 0.05, 2
	}), DefaultThresholds())
	t.Logf("throttle: %s: %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseHardware || hasCause(&r, CauseCompute) {
		t.Errorf("throttling: want hardware first and no compute, got %s", causeList(&r))
	}
}

// TestScoreSurgeExplainsTheQueue: node-a receives 2.4× its usual traffic and its queue grows
// ×8 (compute flat). Asked about node-a alone, the model's traffic over all its instances says
// whether the extra requests are new (a surge: traffic_surge first, the queue its symptom) or
// moved from an instance that stopped serving (lost capacity: the queue cause first).
func TestScoreSurgeExplainsTheQueue(t *testing.T) {
	surge := func(modelNow float64) Report {
		rd := readings("", func(s *Subject, in *Instance) {
			s.Queue.Now, s.QPS.Now, in.QPS.Now, in.QueueDepth.Now = 0.0288, 240, 240, 6
			s.P95.Now, s.BaselineRatio, s.Jitter.Now = 0.08, 3.2, 5
		})
		rd.Instance, rd.Subjects, rd.Instances = "node-a:8000", rd.Subjects[:1], rd.Instances[:1]
		rd.ModelQPS = Pair{400, modelNow}
		return Score(rd, DefaultThresholds())
	}
	r := surge(540) // node-a's 140 req/s more, the others unchanged
	t.Logf("surge: %s: %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseTrafficSurge || !strings.Contains(r.Causes[0].Summary, "explains it") {
		t.Fatalf("want traffic_surge first: %s", causeList(&r))
	}
	if q := cause(t, &r, CauseQueue); !strings.Contains(q.Summary, "weighed down") {
		t.Errorf("queue not weighed down: %q", q.Summary)
	}
	r = surge(400) // the model's traffic unchanged: node-a took the others' requests
	t.Logf("moved: %s: %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseQueue {
		t.Fatalf("want queue first (lost capacity): %s", causeList(&r))
	}
	if c := cause(t, &r, CauseTrafficSurge); !strings.Contains(c.Summary, "lost capacity") {
		t.Errorf("traffic_surge %q", c.Summary)
	}
}

// TestScoreQueueOverFlatTraffic: the queue grows 3.8× to half the service time while compute and
// the arrivals stand still (a smaller max batch size): the queue leads and is the segment's
// diagnosis, as the brief's split rule reads it. With the arrivals up 1.3× (under the surge
// line, past its floor) a queue that grew 2.2× is not raised: a small surge or the batching, the
// readings cannot tell. The same arrivals under a queue grown 3.8× — past twice their growth, the
// wait of a server past its knee — are the surge, at medium confidence (TorchServe's ranker in
// seed 4's corpus: 1.45× the arrivals, the queue 3.4×, answered no direction before); unless the
// batches shrank.
func TestScoreQueueOverFlatTraffic(t *testing.T) {
	queue := func(qps, queue float64) Report {
		return Score(readings("", func(s *Subject, in *Instance) {
			s.Queue.Now, s.P95.Now, s.BaselineRatio = queue, 0.04, 1.6
			s.QPS.Now, in.QPS.Now = qps, qps
		}), DefaultThresholds())
	}
	r := queue(101, 0.0136)
	t.Logf("flat: %s %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseQueue || !strings.Contains(r.Causes[0].Summary, "batching policy") {
		t.Errorf("want queue diagnosed: %s %s", r.Verdict, causeList(&r))
	}
	r = queue(130, 0.0080)
	t.Logf("1.3×, queue 2.2×: %s %s", r.Verdict, causeList(&r))
	if r.Verdict == Diagnosed {
		t.Errorf("a queue 2.2× under 1.3× the traffic diagnosed: %s", causeList(&r))
	}
	r = queue(130, 0.0136)
	t.Logf("1.3×, queue 3.8×: %s %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseTrafficSurge || r.Confidence != "medium" || !strings.Contains(r.Causes[0].Summary, "past twice the arrivals'") {
		t.Errorf("want traffic_surge at medium confidence: %s %s %s", r.Verdict, r.Confidence, causeList(&r))
	}
	if q := cause(t, &r, CauseQueue); !strings.Contains(q.Summary, "weighed down") {
		t.Errorf("queue not weighed down: %q", q.Summary)
	}
	// The same 1.3× with batches a third of their size (a lower max batch size): the batching
	// policy makes the load wait, whatever the small rise of the arrivals.
	r = Score(readings("", func(s *Subject, in *Instance) {
		s.Queue.Now, s.P95.Now, s.BaselineRatio = 0.0136, 0.04, 1.6
		s.QPS.Now, in.QPS.Now, in.BatchSize = 130, 130, Pair{6, 2}
	}), DefaultThresholds())
	t.Logf("smaller batches: %s %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseQueue || !strings.Contains(r.Causes[0].Summary, "batches are smaller (2.0 requests per batch, 6.0 before)") {
		t.Errorf("want queue diagnosed by its smaller batches: %s %s", r.Verdict, causeList(&r))
	}
}

// TestSurgeStep: the arrivals stepped past the surge line against one reference and past the
// floor against the other. The 7-day same-time-of-day mean misses a weekday's level, the hour
// before misses the daily curve; a level that has stood for an hour is no step.
func TestSurgeStep(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name        string
		usual, hour float64
		want        bool
	}{
		{"half again both", 1.56, 1.60, true},
		{"a quiet weekend in the 7-day mean", 1.55, 2.54, true},
		{"the morning's rise in the hour before", 1.52, 1.37, true},
		{"under the line against both", 1.4, 1.45, false},
		{"high for an hour already: no step", 2.0, 1.1, false},
		{"back from a dip to near its usual level", 1.2, 1.6, false},
		{"only the hour before, past the line", nan, 1.5, true},
		{"only the usual, under it", 1.45, nan, false},
		{"nothing read", nan, nan, false},
	} {
		if got := surgeStep(c.usual, c.hour); got != c.want {
			t.Errorf("%s: surgeStep(%g, %g) = %v, want %v", c.name, c.usual, c.hour, got, c.want)
		}
	}
}

// TestScoreStandingMemoryIsNotASymptom: a node whose GPU memory sits at 88 % in the window and
// sat there in the hour before (a server that sizes its KV cache to the card at start) is
// healthy when nothing else moved, with a note saying the level stands; memory that rose past
// the warning line into the window is a sign of the change.
func TestScoreStandingMemoryIsNotASymptom(t *testing.T) {
	rd := readings("", func(_ *Subject, in *Instance) { in.GPUMem, in.GPUMemPeak = Pair{0.88, 0.881}, 0.885 })
	r := Score(rd, DefaultThresholds())
	if r.Verdict != Healthy {
		t.Fatalf("standing memory: %s (%s)", r.Verdict, r.Summary)
	}
	if !strings.Contains(strings.Join(r.Notices, "\n"), "stood above the 85 % warning line") {
		t.Errorf("no standing note: %v", r.Notices)
	}
	// Memory that rose past the warning line while the model's requests there show nothing
	// (GPU series carry no model: it may be another model's) is a note, and the summary says it.
	rd = readings("", func(_ *Subject, in *Instance) { in.GPUMem, in.GPUMemPeak = Pair{0.80, 0.88}, 0.885 })
	r = Score(rd, DefaultThresholds())
	if r.Verdict != Healthy || !strings.Contains(r.Summary, "GPU memory on node-a is past its line, but none of its requests there show it") ||
		!strings.Contains(strings.Join(r.Notices, "\n"), "m's own requests on node-a:8000 show no sign of it") {
		t.Errorf("unfelt memory: %s: %s %v", r.Verdict, r.Summary, r.Notices)
	}
	// The same memory while the model's service time on the instance rose 1.15× is its sign.
	rd = readings("", func(s *Subject, in *Instance) {
		in.GPUMem, in.GPUMemPeak = Pair{0.80, 0.88}, 0.885
		s.Compute.Now = s.Compute.Before * 1.2
	})
	if r := Score(rd, DefaultThresholds()); r.Verdict == Healthy {
		t.Errorf("memory that rose past the warning line with the model slower reads healthy: %s", r.Summary)
	}
	// A node question (a GPU alert's) is about the memory itself: always a symptom there.
	rd = readings("", func(_ *Subject, in *Instance) { in.GPUMem, in.GPUMemPeak = Pair{0.80, 0.88}, 0.885 })
	nr := &NodeReadings{Node: "node-a", Window: rd.Window, Before: rd.Before, Models: []*Readings{rd}}
	if r := ScoreNode(nr, DefaultThresholds()); r.Verdict == Healthy {
		t.Errorf("a node question with its memory past the line reads healthy: %s", r.Summary)
	}
}

// TestScoreInstanceOutOfService: node-b's load state says not ready from 4 minutes into the
// window to its end, it serves nothing, and no restart was seen: it stopped serving (lost
// capacity), which is not a warm-up to diagnose. The same stretch ending with the instance
// serving again after a restart is a warm-up.
func TestScoreInstanceOutOfService(t *testing.T) {
	rd := readings("", nil)
	rd.Instances[1].Warmup = []Warmup{{Start: tFrom.Add(4 * time.Minute), End: tEnd, Reason: "model not ready"}}
	rd.Instances[1].QPS.Now, rd.Subjects[1].QPS.Now = math.NaN(), math.NaN()
	r := Score(rd, DefaultThresholds())
	t.Logf("%s: %s", r.Verdict, causeList(&r))
	if r.Verdict == Diagnosed && r.Causes[0].ID == CauseWarmup {
		t.Fatalf("an instance out of service diagnosed as a warm-up: %s", r.Summary)
	}
	if c := cause(t, &r, CauseWarmup); !strings.Contains(c.Summary, "out of service") {
		t.Errorf("warmup %q", c.Summary)
	}
	rd.Instances[1].Warmup = []Warmup{{Start: tFrom.Add(4 * time.Minute), End: tFrom.Add(8 * time.Minute), Reason: "model not ready, process restarted"}}
	rd.Instances[1].QPS.Now, rd.Subjects[1].QPS.Now = 60, 60
	if r := Score(rd, DefaultThresholds()); r.Verdict != Diagnosed || r.Causes[0].ID != CauseWarmup {
		t.Errorf("a restart's warm-up: %s %s", r.Verdict, causeList(&r))
	}
}

// TestScoreStandingJitterIsNotASymptom: a P99/P50 past the jitter line that stood there in the
// hour before (a generation server's spread follows its output lengths) does not keep a quiet
// window from reading healthy; jitter that rose past the line does.
func TestScoreStandingJitterIsNotASymptom(t *testing.T) {
	rd := readings("", func(s *Subject, _ *Instance) { s.Jitter = Pair{8, 9} })
	if r := Score(rd, DefaultThresholds()); r.Verdict != Healthy {
		t.Errorf("standing jitter: %s (%s)", r.Verdict, r.Summary)
	}
	rd = readings("", func(s *Subject, _ *Instance) { s.Jitter = Pair{3, 9} })
	if r := Score(rd, DefaultThresholds()); r.Verdict == Healthy {
		t.Errorf("jitter that rose past the line reads healthy: %s", r.Summary)
	}
}

// TestScoreLostCapacity: an instance that stopped serving (not ready to the window's end, no
// restart) whose traffic the model's other instance took over is lost capacity, the queue
// cause, diagnosed even before the survivor's latency moves; the same instance whose traffic
// went nowhere is only a candidate (requests failing, or the demand gone with it).
func TestScoreLostCapacity(t *testing.T) {
	rd := readings("", nil)
	rd.Instances[1].Warmup = []Warmup{{Start: tFrom.Add(10 * time.Minute), End: tEnd, Reason: "model not ready"}}
	rd.Instances[1].QPS.Now, rd.Subjects[1].QPS.Now = 67, math.NaN()
	rd.Instances[0].QPS.Now, rd.Subjects[0].QPS.Now = 133, 133
	r := Score(rd, DefaultThresholds())
	t.Logf("%s: %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseQueue || r.Causes[0].Instance != "node-b:8000" ||
		!strings.Contains(r.Causes[0].Summary, "lost capacity") {
		t.Fatalf("lost capacity: %s %s (%s)", r.Verdict, causeList(&r), r.Summary)
	}
	for _, c := range r.Causes {
		if c.ID == CauseTrafficSurge && c.Score >= DefaultThresholds().DiagnosedScore {
			t.Errorf("the traffic taken over reads as a surge: %s", c.Summary)
		}
	}
	rd.Subjects[0].Queue.Now = 0.0036 * 3
	if r2 := Score(rd, DefaultThresholds()); r2.Causes[0].ID != CauseQueue || !(r2.Causes[0].Score > r.Causes[0].Score) {
		t.Errorf("the survivor's queue tripled and lost capacity did not grow surer: %s", causeList(&r2))
	}

	rd = readings("", nil)
	rd.Instances[1].Warmup = []Warmup{{Start: tFrom.Add(10 * time.Minute), End: tEnd, Reason: "model not ready"}}
	rd.Instances[1].QPS.Now, rd.Subjects[1].QPS.Now = 67, math.NaN()
	r = Score(rd, DefaultThresholds())
	if r.Verdict == Diagnosed && r.Causes[0].ID == CauseQueue {
		t.Errorf("traffic that did not move diagnosed as lost capacity: %s", r.Summary)
	}
}

// TestScoreDrainedAtTheWindowsEnd: a server that exports no load state. node-b stopped serving
// five minutes before the window's end: its mean in the window barely fell, but its last point
// is 0 and the other instance's last point holds its traffic: lost capacity. The same last
// points with the other instance not taking the traffic are no cause; a quiet window, no
// candidate at all.
func TestScoreDrainedAtTheWindowsEnd(t *testing.T) {
	rd := readings("", nil)
	rd.Instances[1].QPS.Now, rd.Instances[1].QPSLast = 80, 0
	rd.Instances[0].QPS.Now, rd.Instances[0].QPSLast = 110, 195
	r := Score(rd, DefaultThresholds())
	t.Logf("%s: %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseQueue || r.Causes[0].Instance != "node-b:8000" ||
		!strings.Contains(r.Causes[0].Summary, "drained or stopped serving") {
		t.Fatalf("drained: %s %s (%s)", r.Verdict, causeList(&r), r.Summary)
	}
	rd.Instances[0].QPSLast = 100
	if r := Score(rd, DefaultThresholds()); hasCause(&r, CauseQueue) {
		t.Errorf("traffic gone from one instance, not moved: %s", causeList(&r))
	}
	rd = readings("", nil)
	rd.Instances[0].QPSLast, rd.Instances[1].QPSLast = 97, 104
	if r := Score(rd, DefaultThresholds()); r.Verdict != Healthy || len(r.Causes) > 0 {
		t.Errorf("quiet window: %s %s", r.Verdict, causeList(&r))
	}
}

// TestScoreMemoryThatRoseExplainsCompute: compute 1.7× its hour before (just past its rise
// line) while GPU memory climbed from 81 % to 92 %: the memory explains the rise, so
// compute_memory leads and "compute" (cause not measured) is left out. The same rise on a node
// whose memory stands at 86 % whatever the load is "compute", and says the memory stood there.
func TestScoreMemoryThatRoseExplainsCompute(t *testing.T) {
	rd := readings("", func(s *Subject, in *Instance) {
		s.Compute.Now, s.P95.Now, s.BaselineRatio = 0.0124*1.7, 0.038, 1.5
		in.GPUMem, in.GPUMemPeak = Pair{0.806, 0.922}, 0.925
	})
	r := Score(rd, DefaultThresholds())
	t.Logf("%s: %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseComputeMemory || hasCause(&r, CauseCompute) {
		t.Fatalf("memory that rose: %s %s", r.Verdict, causeList(&r))
	}
	rd = readings("", func(s *Subject, in *Instance) {
		s.Compute.Now, s.P95.Now, s.BaselineRatio = 0.0124*2, 0.045, 1.8
		in.GPUMem, in.GPUMemPeak = Pair{0.86, 0.86}, 0.86
	})
	rd.Instances[1].GPUMem, rd.Instances[1].GPUMemPeak = Pair{0.86, 0.86}, 0.86
	r = Score(rd, DefaultThresholds())
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseCompute || !strings.Contains(r.Causes[0].Summary, "where it stood before") {
		t.Errorf("standing memory: %s %s (%s)", r.Verdict, causeList(&r), r.Summary)
	}
}

// TestScoreChangeConfinedToOneSegment: a queue that is a small part of the time (90 ms before
// 3.7 s of compute) grows nearly fourfold over flat arrivals: the total rises under its 1.2×
// line, but the change is all the queue's, which leads and is diagnosed. The same queue growth
// with the total under 1.05× leads nothing.
func TestScoreChangeConfinedToOneSegment(t *testing.T) {
	confined := func(queue float64) Report {
		return Score(readings("", func(s *Subject, in *Instance) {
			s.Compute, s.Queue, s.P95 = Pair{3.68, 3.68}, Pair{0.09, queue}, Pair{5.9, 5.9 + queue - 0.09}
			in.QueueDepth.Now = 1.4
		}), DefaultThresholds())
	}
	r := confined(0.34)
	t.Logf("confined: %s %s lead %q: %s", r.Verdict, causeList(&r), r.Lead, r.Summary)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseQueue || r.Lead != SegQueue {
		t.Errorf("want the queue diagnosed and leading: %s %s lead %q", r.Verdict, causeList(&r), r.Lead)
	}
	r = confined(0.2)
	t.Logf("under 1.05×: %s %s lead %q", r.Verdict, causeList(&r), r.Lead)
	if r.Lead != "" || r.Verdict == Diagnosed {
		t.Errorf("a queue rise under 5 %% of the total led %q: %s %s", r.Lead, r.Verdict, causeList(&r))
	}
}

// TestScoreFastServiceStep: on a fast service (13 ms a request) a step of a few milliseconds is
// a change: the step floor is a tenth of its time (1.3 ms), not 5 ms. The gateway's 2.6 ms → 7.5 ms
// (×1.37 on the total, the service steady) leads and, the network leading, is diagnosed; a queue
// 2.3 ms → 5.5 ms over flat arrivals (×1.24) leads and is diagnosed. The same 3 ms queue step
// on a 400 ms service is under 5 ms and nothing.
func TestScoreFastServiceStep(t *testing.T) {
	fast := func(mutate func(s *Subject, in *Instance)) Report {
		return Score(readings("", func(s *Subject, in *Instance) {
			s.Queue, s.Compute, s.Network = Pair{0.0023, 0.0023}, Pair{0.0081, 0.0081}, Pair{0.0026, 0.0026}
			s.P95 = Pair{0.03, 0.03}
			mutate(s, in)
		}), DefaultThresholds())
	}
	r := fast(func(s *Subject, _ *Instance) { s.Network.Now = 0.0075 })
	t.Logf("network: %s %s lead %q: %s", r.Verdict, causeList(&r), r.Lead, r.Summary)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseNetwork || r.Lead != SegNetwork {
		t.Errorf("want the network diagnosed and leading: %s %s lead %q", r.Verdict, causeList(&r), r.Lead)
	}
	r = fast(func(s *Subject, in *Instance) { s.Queue.Now, in.QueueDepth.Now = 0.0055, 1.2 })
	t.Logf("queue: %s %s lead %q: %s", r.Verdict, causeList(&r), r.Lead, r.Summary)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseQueue || r.Lead != SegQueue {
		t.Errorf("want the queue diagnosed and leading: %s %s lead %q", r.Verdict, causeList(&r), r.Lead)
	}
	r = Score(readings("", func(s *Subject, in *Instance) {
		s.Queue, s.Compute, s.Network = Pair{0.0023, 0.0055}, Pair{0.4, 0.4}, nanPair()
		in.QueueDepth.Now = 1.2
	}), DefaultThresholds())
	if r.Lead != "" || r.Verdict == Diagnosed {
		t.Errorf("a 3 ms queue step on a 400 ms service led %q: %s %s", r.Lead, r.Verdict, causeList(&r))
	}
}

// TestScoreKVExhaustionExplainsTheQueue: the KV cache of node-a fills (20 % → 98 %) and 8.6 % of
// the requests are preempted; compute rises 1.36× (under its 1.5× line) while the queue, where
// the preempted requests wait again, grows 4.6× and leads the change. The exhaustion explains
// the queue: it ranks first, and the queue, its symptom, is weighed down. Without preemptions
// the queue's own causes keep it.
func TestScoreKVExhaustionExplainsTheQueue(t *testing.T) {
	kv := func(preempted float64) Report {
		return Score(readings("", func(s *Subject, in *Instance) {
			s.Queue, s.Compute, s.Network = Pair{0.0129, 0.0596}, Pair{0.0641, 0.0874}, nanPair()
			s.P95, s.BaselineRatio = Pair{0.163, 0.342}, 1.9
			in.QueueDepth, in.Waiting = Pair{0.2, 0.93}, Pair{0.2, 0.93}
			in.KVCache, in.KVCachePeak = Pair{0.204, 0.98}, 0.98
			in.Preemption, in.PreemptionPeak = Pair{0.001, preempted}, preempted
		}), DefaultThresholds())
	}
	r := kv(0.086)
	t.Logf("preempting: %s %s lead %q: %s", r.Verdict, causeList(&r), r.Lead, r.Summary)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseKVCache || r.Lead != SegQueue {
		t.Errorf("want the KV cache first under the queue's lead: %s %s lead %q", r.Verdict, causeList(&r), r.Lead)
	}
	if c := cause(t, &r, CauseQueue); !strings.Contains(c.Summary, "weighed down: the KV cache of node-a:8000 is exhausted") {
		t.Errorf("the queue is not weighed down: %q", c.Summary)
	}
	r = kv(0.001)
	t.Logf("no preemptions: %s %s", r.Verdict, causeList(&r))
	if len(r.Causes) > 0 && r.Causes[0].ID == CauseKVCache {
		t.Errorf("a full cache without preemptions explained the queue: %s", causeList(&r))
	}
}

// TestScoreStandingMemoryExplainsNoComputeRise: GPU memory at 86.6 % in the hour before and now
// (a server that sizes its cache to the card at start) while compute rises 3.5×: the memory
// explains no change, so the rise is "compute" (the cause not among the signals measured), the
// memory a candidate under the diagnosis line. Memory that climbed to the same level explains it.
func TestScoreStandingMemoryExplainsNoComputeRise(t *testing.T) {
	rise := func(memBefore float64) Report {
		return Score(readings("", func(s *Subject, in *Instance) {
			s.Compute, s.Queue, s.Network = Pair{2.28, 8.06}, Pair{0.07, 0.088}, nanPair()
			s.P95, s.BaselineRatio = Pair{4.07, 14.8}, 2.7
			in.GPUMem, in.GPUMemPeak = Pair{memBefore, 0.866}, 0.866
		}), DefaultThresholds())
	}
	r := rise(0.866)
	t.Logf("standing: %s %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseCompute {
		t.Errorf("want compute first: %s %s", r.Verdict, causeList(&r))
	}
	if c := cause(t, &r, CauseComputeMemory); c.Score >= DefaultThresholds().DiagnosedScore {
		t.Errorf("standing memory diagnosed the rise: %v %q", c.Score, c.Summary)
	}
	r = rise(0.6)
	t.Logf("climbed: %s %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseComputeMemory {
		t.Errorf("memory that climbed to 87 %% does not explain the rise: %s %s", r.Verdict, causeList(&r))
	}
}

// TestScoreCorrectedECCStorm: compute rises 1.25× on node-a while its GPU counts 25 corrected ECC
// errors in the window (1 in the hour before): a GPU starting to count corrected errors by the
// dozen has failing memory, which explains the compute rise (hardware, not the unexplained
// "compute"). A steady trickle (40 in the hour before, 10 in the window) is no storm.
func TestScoreCorrectedECCStorm(t *testing.T) {
	storm := func(before, now float64) Report {
		return Score(readings("", func(s *Subject, in *Instance) {
			s.Compute, s.Queue, s.Network = Pair{2.29, 2.86}, Pair{0.07, 0.07}, nanPair()
			s.P95, s.BaselineRatio = Pair{4.1, 5.1}, 1.25
			in.ECCCorrected = Pair{before, now}
		}), DefaultThresholds())
	}
	r := storm(1, 25)
	t.Logf("storm: %s %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseHardware || !strings.Contains(r.Causes[0].Summary, "25 corrected ECC errors") || hasCause(&r, CauseCompute) {
		t.Errorf("want the corrected-error storm to explain the compute rise: %s %s", r.Verdict, causeList(&r))
	}
	r = storm(40, 10)
	t.Logf("trickle: %s %s", r.Verdict, causeList(&r))
	if hasCause(&r, CauseHardware) {
		t.Errorf("a steady trickle of corrected errors named as hardware: %s", causeList(&r))
	}
}
