package triage

import (
	"math"
	"strings"
	"testing"
	"time"
)

var (
	tEnd  = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tFrom = tEnd.Add(-15 * time.Minute)
)

// steady is a subject in steady state: 3.6 ms queue, 12.4 ms compute, 2.5 ms network.
func steady(instance, version string) Subject {
	return Subject{Instance: instance, Version: version, QPS: Pair{100, 100},
		P50: Pair{0.014, 0.014}, P95: Pair{0.025, 0.025}, P99: Pair{0.03, 0.03}, Jitter: Pair{1.8, 1.8}, P95Raw: nanPair(),
		BaselineRatio: 1.0, BaselineP95: 0.025,
		Queue: Pair{0.0036, 0.0036}, Compute: Pair{0.0124, 0.0124}, Network: Pair{0.0025, 0.0025},
		ErrorRatio: Pair{0.001, 0.001}, TimeoutRatio: Pair{0.0002, 0.0002}}
}

func calm(name string) Instance {
	return Instance{Name: name, Node: nodeOf(name), QPS: Pair{100, 100}, QPSBaseline: 100, QPSLast: math.NaN(),
		GPUMem: Pair{0.6, 0.6}, GPUUtil: Pair{0.4, 0.4}, GPUMemPeak: 0.6, XID: Pair{0, 0}, ECCUncorrected: Pair{0, 0},
		CacheHit: Pair{0.985, 0.985}, Waiting: Pair{0.5, 0.5}, QueueDepth: Pair{0.5, 0.5}, Preemption: nanPair(),
		InputMean: Pair{200, 200}, Confidence: Pair{0.86, 0.86}, Fallback: Pair{0.0005, 0.0005}, WaitingIsQueue: true,
		KVCache: nanPair(), WaitingDeferred: nanPair()}
}

func readings(version string, mutate func(s *Subject, in *Instance)) *Readings {
	rd := &Readings{Model: "m", Version: version, Window: Span{tFrom, tEnd}, Before: Span{tFrom.Add(-time.Hour), tFrom}}
	s, in := steady("node-a:8000", "v1"), calm("node-a:8000")
	if mutate != nil {
		mutate(&s, &in)
	}
	rd.Subjects = []Subject{s, steady("node-b:8000", "v1")}
	rd.Instances = []Instance{in, calm("node-b:8000")}
	return rd
}

// TestScoreRanksEachCause: readings shaped like each cause put that cause first (pure; no
// Prometheus).
func TestScoreRanksEachCause(t *testing.T) {
	cases := []struct {
		name    string
		version string
		mutate  func(s *Subject, in *Instance)
		want    string
		verdict Verdict
	}{
		{"quiet", "", nil, "", Healthy},
		// The queue over traffic that rose 1.2× (under the surge line): the batching's.
		{"queue surge", "", func(s *Subject, in *Instance) {
			s.Queue.Now, s.QPS.Now, in.QPS.Now, in.QueueDepth.Now = 0.032, 120, 120, 5
			s.P95.Now, s.BaselineRatio, s.Jitter.Now = 0.09, 3.6, 6.7
		}, CauseQueue, Diagnosed},
		// The same queue with the traffic at 1.6×: the surge explains it.
		{"queue under a surge", "", func(s *Subject, in *Instance) {
			s.Queue.Now, s.QPS.Now, in.QPS.Now, in.QueueDepth.Now = 0.032, 160, 160, 5
			s.P95.Now, s.BaselineRatio, s.Jitter.Now = 0.09, 3.6, 6.7
		}, CauseTrafficSurge, Diagnosed},
		{"traffic alone", "", func(s *Subject, in *Instance) { in.QPS.Now, s.QPS.Now = 220, 220 }, CauseTrafficSurge, Diagnosed},
		{"compute with memory", "", func(s *Subject, in *Instance) {
			s.Compute.Now, in.GPUMem.Now, in.GPUMemPeak = 0.055, 0.935, 0.94
			s.P95.Now, s.BaselineRatio = 0.3, 12
		}, CauseComputeMemory, Diagnosed},
		{"network", "", func(s *Subject, _ *Instance) { s.Network.Now = 0.0626 }, CauseNetwork, Diagnosed},
		// The model's own requests show the idle GPU (a quarter falls back): it is the model's.
		{"gpu idle", "", func(_ *Subject, in *Instance) {
			in.IdleGPUs, in.GPUUtil.Now, in.Fallback.Now = []string{"6"}, 0, 0.25
		}, CauseGPUIdle, Diagnosed},
		// An idle GPU the model's requests do not feel serves another model: co-tenant evidence
		// in the notices, never the model's cause.
		{"idle GPU of another model", "", func(_ *Subject, in *Instance) { in.IdleGPUs, in.GPUUtil.Now = []string{"6"}, 0 }, "", Healthy},
		// Hardware events with the model's compute slowed: hardware leads compute's candidates
		// and "compute" (no measured explanation) is left out.
		{"hardware", "", func(s *Subject, in *Instance) {
			in.XID.Now, in.ECCUncorrected.Now = 2, 1
			s.Compute.Now, s.P95.Now, s.BaselineRatio = 0.02, 0.04, 1.6
		}, CauseHardware, Diagnosed},
		// The same events with the model untouched weigh half and leave it healthy: listed for
		// the node's owners, not the model's cause.
		{"hardware the model does not feel", "", func(_ *Subject, in *Instance) { in.XID.Now, in.ECCUncorrected.Now = 2, 1 }, CauseHardware, Healthy},
		{"cache drop", "", func(_ *Subject, in *Instance) { in.CacheHit.Now = 0.4 }, CauseFramework, Diagnosed},
		{"input shift", "", func(_ *Subject, in *Instance) { in.InputMean.Now = 700 }, CauseInputShift, Diagnosed},
		{"warm-up beats its cold cache", "", func(s *Subject, in *Instance) {
			in.Warmup = []Warmup{{Start: tFrom.Add(-time.Minute), End: tFrom.Add(3 * time.Minute), Reason: "process restarted"}}
			in.CacheHit.Now, s.P95Raw = 0.5, Pair{0.025, 0.2}
		}, CauseWarmup, Diagnosed},
		// The model's requests show none of it: a note (it may be another model's memory).
		{"memory high alone: healthy", "", func(_ *Subject, in *Instance) { in.GPUMem.Now = 0.9 }, "", Healthy},
		{"latency up without a sign: no direction", "", func(s *Subject, _ *Instance) { s.BaselineRatio, s.P95.Now = 2, 0.05 }, "", NoDirection},
	}
	th := DefaultThresholds()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Score(readings(c.version, c.mutate), th)
			t.Logf("%s: %s", r.Verdict, causeList(&r))
			if r.Verdict != c.verdict {
				t.Fatalf("verdict %s, want %s: %s", r.Verdict, c.verdict, r.Summary)
			}
			if c.want == "" {
				for _, x := range r.Causes {
					if x.Score >= 0.2 {
						t.Fatalf("cause %s scores %.3f", x.ID, x.Score)
					}
				}
				return
			}
			if len(r.Causes) == 0 || r.Causes[0].ID != c.want {
				t.Fatalf("first cause: want %s, got %s", c.want, causeList(&r))
			}
			top := r.Causes[0]
			if top.Instance != "node-a:8000" || top.Score > 0.99 || top.Score < MinScore || len(top.Evidence) == 0 || len(top.Links) == 0 {
				t.Fatalf("cause %+v", top)
			}
			if !strings.HasPrefix(top.Links[0].URL, "/d/inferscope-overview/?viewPanel=panel-") || !strings.Contains(top.Links[0].URL, "var-instance=node-a%3A8000") {
				t.Fatalf("link %s", top.Links[0].URL)
			}
		})
	}
}

// TestScoreRegression: a version deployed 2 hours before the window and 15 % slower than the
// version it joined on the same instance is a model regression; 2 % is not; the established
// version itself is not blamed; without a known deploy no version is compared with another.
func TestScoreRegression(t *testing.T) {
	th := DefaultThresholds()
	mk := func(slower float64, version string) *Readings {
		rd := readings(version, nil)
		rd.DeploysRead = true
		rd.Deploys = []Deploy{{Instance: "node-a:8000", Version: "v2", At: tFrom.Add(-2 * time.Hour)}}
		c := steady("node-a:8000", "v2")
		c.Queue.Now *= slower
		c.Queue.Before *= slower
		c.Compute.Now *= slower
		c.Compute.Before *= slower
		c.QPS = Pair{25, 25}
		rd.Subjects = append(rd.Subjects, c)
		return rd
	}
	r := Score(mk(1.15, "v2"), th)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseModelRegression || r.Causes[0].Version != "v2" {
		t.Fatalf("15 %% slower: %s %s", r.Verdict, causeList(&r))
	}
	e := r.Causes[0].Evidence[0]
	if math.Abs(*e.Change-0.15) > 1e-9 {
		t.Fatalf("change %v", *e.Change)
	}
	if r = Score(mk(1.02, "v2"), th); r.Verdict != Healthy {
		t.Fatalf("2 %% slower: %s %s", r.Verdict, causeList(&r))
	}
	if r = Score(mk(1.15, "v1"), th); r.Verdict != Healthy {
		t.Fatalf("the faster sibling: %s %s", r.Verdict, causeList(&r))
	}
	unknown := mk(1.15, "v2")
	unknown.Deploys = nil
	if r = Score(unknown, th); r.Verdict != Healthy || !strings.Contains(strings.Join(r.Notices, "\n"), "cannot tell which is new") {
		t.Fatalf("no deploy known: %s %s %q", r.Verdict, causeList(&r), r.Notices)
	}
}

func TestGradeAndWarmFraction(t *testing.T) {
	for _, c := range []struct{ x, lo, hi, want float64 }{
		{0, 1, 2, 0}, {1.5, 1, 2, 0.5}, {3, 1, 2, 1}, {math.NaN(), 1, 2, 0},
	} {
		if g := grade(c.x, c.lo, c.hi); g != c.want {
			t.Errorf("grade(%g, %g, %g) = %g", c.x, c.lo, c.hi, g)
		}
	}
	ws := []Warmup{
		{Start: tFrom.Add(-time.Minute), End: tFrom.Add(2 * time.Minute)},
		{Start: tFrom.Add(time.Minute), End: tFrom.Add(3 * time.Minute)}, // overlaps the first
		{Start: tEnd.Add(-time.Minute), End: tEnd.Add(time.Minute)},
	}
	if f := warmFraction(ws, tFrom, tEnd); math.Abs(f-4.0/15) > 1e-12 {
		t.Errorf("warm fraction %g, want 4/15", f)
	}
}

func TestOptions(t *testing.T) {
	now := tEnd
	o := Options{Model: "m"}.WithDefaults(now)
	if !o.To.Equal(now) || !o.From.Equal(now.Add(-DefaultWindow)) || o.Before != DefaultBefore || o.Validate() != nil {
		t.Fatalf("defaults %+v", o)
	}
	if err := (Options{Node: "node-a", GPU: "6"}).WithDefaults(now).Validate(); err != nil {
		t.Errorf("node and gpu: %v", err)
	}
	if err := (Options{}).WithDefaults(now).Validate(); err == nil || !strings.Contains(err.Error(), "model or node is required") {
		t.Errorf("no model, no node: %v", err)
	}
	for _, bad := range []Options{
		{},
		{Node: "node-a", Version: "v1"},
		{Model: "m", GPU: "6"},
		{Node: "node-a", Instance: "node-b:8000"},
		{Model: "m", From: now, To: now.Add(-time.Minute)},
		{Model: "m", From: now.Add(-48 * time.Hour), To: now},
		{Model: "m", Before: 30 * time.Hour},
	} {
		if err := bad.WithDefaults(now).Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	q, err := OptionsFromQuery(map[string][]string{"model": {"m"}, "from": {"1795000000"}, "to": {"2026-11-23T12:00:00Z"}, "before": {"2h"}})
	if err != nil || q.From.Unix() != 1795000000 || !q.To.Equal(tEnd) || q.Before != 2*time.Hour {
		t.Fatalf("%+v %v", q, err)
	}
	q, err = OptionsFromQuery(map[string][]string{"node": {"node-a"}, "gpu": {"6"}})
	if err != nil || q.Node != "node-a" || q.GPU != "6" || q.Model != "" {
		t.Fatalf("node question: %+v %v", q, err)
	}
	for _, bad := range []map[string][]string{{"from": {"yesterday"}}, {"to": {"x"}}, {"before": {"long"}}} {
		if _, err := OptionsFromQuery(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestHealthFromMarks(t *testing.T) {
	th := DefaultThresholds()
	h := HealthFrom(readings("", nil), th)
	if h.Status != StatusOK || len(h.Layers) != 4 {
		t.Fatalf("quiet: %+v", h)
	}
	h = HealthFrom(readings("", func(s *Subject, in *Instance) {
		in.GPUMem.Now, s.BaselineRatio, s.P95.Now, s.Jitter.Now = 0.88, 3.5, 0.0875, 6
	}), th)
	want := map[string]string{LayerResource: StatusWarn, LayerService: StatusCritical, LayerFramework: StatusOK, LayerBusiness: StatusOK}
	for _, l := range h.Layers {
		if l.Status != want[l.Layer] {
			t.Errorf("layer %s %s, want %s: %+v", l.Layer, l.Status, want[l.Layer], l.Readings)
		}
	}
	if h.Status != StatusCritical {
		t.Errorf("overall %s", h.Status)
	}
}

// TestScoreNodeNamesTheModelOnTheIdleGPU: GPU series carry no model, so the idle condition holds
// for both models of the node; the one whose requests fall back ranks first and is named, the
// GPU asked about is named in the evidence and the steps, and the node's findings are not
// repeated per model.
func TestScoreNodeNamesTheModelOnTheIdleGPU(t *testing.T) {
	idle := func(model string, fallback float64) *Readings {
		rd := readings("", func(s *Subject, in *Instance) {
			in.IdleGPUs, in.GPUUtil.Now, in.Fallback.Now = []string{"6"}, 0, fallback
		})
		rd.Model, rd.Node, rd.GPU = model, "node-a", "6"
		rd.Subjects, rd.Instances = rd.Subjects[:1], rd.Instances[:1]
		return rd
	}
	nr := &NodeReadings{Node: "node-a", GPU: "6", Window: Span{tFrom, tEnd}, Before: Span{tFrom.Add(-time.Hour), tFrom},
		Models: []*Readings{idle("recsys-ranker", 0.0005), idle("text-embedder", 0.25)}}
	r := ScoreNode(nr, DefaultThresholds())
	if r.Verdict != Diagnosed || len(r.Causes) == 0 || r.Causes[0].ID != CauseGPUIdle || r.Causes[0].Model != "text-embedder" {
		t.Fatalf("%s %+v", r.Verdict, r.Causes)
	}
	top := r.Causes[0]
	if top.Score != 0.95 || !strings.Contains(top.Summary, "GPU 6 of node-a") || !strings.Contains(top.Summary, "text-embedder") {
		t.Errorf("top %.3f %q", top.Score, top.Summary)
	}
	if top.Evidence[0].What != "lowest utilisation of GPU 6 (the GPU asked about)" {
		t.Errorf("evidence %q", top.Evidence[0].What)
	}
	if !strings.Contains(top.Links[0].URL, "&var-model=text-embedder") || !strings.Contains(top.Links[0].URL, "&var-gpu=6") {
		t.Errorf("link %s", top.Links[0].URL)
	}
	gpuStep := r.Steps[1].Finding
	if !strings.HasPrefix(gpuStep, "GPU 6 of node-a (the GPU asked about") || strings.Contains(gpuStep, "text-embedder —") {
		t.Errorf("GPU step %q", gpuStep)
	}
	if r.Node != "node-a" || r.GPU != "6" || r.Model != "" || strings.Join(r.Models, ",") != "recsys-ranker,text-embedder" {
		t.Errorf("report subject %q %q %q %v", r.Node, r.GPU, r.Model, r.Models)
	}

	// Without the fallback sign the idle GPU still diagnoses, a notch lower.
	one := ScoreNode(&NodeReadings{Node: "node-a", Window: nr.Window, Before: nr.Before, Models: nr.Models[:1]}, DefaultThresholds())
	if one.Verdict != Diagnosed || one.Causes[0].ID != CauseGPUIdle || one.Causes[0].Score != 0.8 {
		t.Errorf("recsys alone: %s %+v", one.Verdict, one.Causes)
	}
	// No model's requests show it: the GPU's, naming no model (GPU series carry none).
	if c := one.Causes[0]; c.Model != "" || !strings.Contains(c.Summary, "no model's requests show it yet") {
		t.Errorf("an idle GPU no model shows names %q: %q", c.Model, c.Summary)
	}

	calmNode := ScoreNode(&NodeReadings{Node: "node-a", Window: nr.Window, Before: nr.Before,
		Models: []*Readings{readings("", nil)}}, DefaultThresholds())
	if calmNode.Verdict != Healthy || !strings.HasPrefix(calmNode.Summary, "node-a looks healthy") {
		t.Errorf("calm node: %s %q", calmNode.Verdict, calmNode.Summary)
	}
	empty := ScoreNode(&NodeReadings{Node: "node-z", Window: nr.Window, Before: nr.Before}, DefaultThresholds())
	if empty.Verdict != Healthy || !strings.Contains(empty.Summary, "no model was served on node-z") || len(empty.Steps) != 5 {
		t.Errorf("empty node: %s %q", empty.Verdict, empty.Summary)
	}
}

// TestScoreNodeHardwareExplainsCompute: a GPU alert's node question, one uncorrected ECC error
// on the GPU asked about, and one model's compute up ×4.7: the event explains the rise, so
// "compute" (the cause not among the signals measured here) is not named, above it or at all.
// The node's hardware cause names no model, so the model's own compute candidates cannot drop
// "compute" by themselves (orderCompute matches model and instance).
func TestScoreNodeHardwareExplainsCompute(t *testing.T) {
	rd := readings("", func(s *Subject, in *Instance) {
		in.ECCUncorrected.Now = 1
		s.Compute.Now, s.P95.Now, s.BaselineRatio = 4.7*s.Compute.Before, 0.2, 4.5
	})
	rd.Model, rd.Node, rd.GPU = "detector", "node-a", "6"
	rd.Subjects, rd.Instances = rd.Subjects[:1], rd.Instances[:1]
	r := ScoreNode(&NodeReadings{Node: "node-a", GPU: "6", Window: rd.Window, Before: rd.Before, Models: []*Readings{rd}}, DefaultThresholds())
	t.Logf("%s: %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseHardware || hasCause(&r, CauseCompute) {
		t.Fatalf("%s %s, want hardware first and no unexplained compute", r.Verdict, causeList(&r))
	}
}

// TestScoreNodeDeployRestartsTheProcess: one server process serves both models of the node; the
// deploy of one restarts it, so the other model's warm-up is that deploy's too: expected, not
// the node question's diagnosis.
func TestScoreNodeDeployRestartsTheProcess(t *testing.T) {
	warm := []Warmup{{Start: tFrom.Add(4 * time.Minute), End: tFrom.Add(9 * time.Minute), Reason: "process restarted"}}
	model := func(name string) *Readings {
		rd := readings("", func(_ *Subject, in *Instance) { in.Warmup = warm })
		rd.Model, rd.Node = name, "node-a"
		rd.Subjects, rd.Instances = rd.Subjects[:1], rd.Instances[:1]
		return rd
	}
	other, deployed := model("classifier"), model("embedder")
	v2 := steady("node-a:8000", "v2")
	v2.QPS = Pair{math.NaN(), 100}
	deployed.Subjects = append(deployed.Subjects, v2)
	deployed.Deploys, deployed.DeploysRead = []Deploy{{Instance: "node-a:8000", Version: "v2", At: tFrom.Add(4 * time.Minute)}}, true
	alone := ScoreNode(&NodeReadings{Node: "node-a", Window: Span{tFrom, tEnd}, Before: Span{tFrom.Add(-time.Hour), tFrom},
		Models: []*Readings{other}}, DefaultThresholds())
	if alone.Verdict != Diagnosed || alone.Causes[0].ID != CauseWarmup {
		t.Fatalf("a restart with no deploy seen: %s %s", alone.Verdict, causeList(&alone))
	}
	r := ScoreNode(&NodeReadings{Node: "node-a", Window: Span{tFrom, tEnd}, Before: Span{tFrom.Add(-time.Hour), tFrom},
		Models: []*Readings{model("classifier"), deployed}}, DefaultThresholds())
	t.Logf("%s: %s", r.Verdict, causeList(&r))
	for _, c := range r.Causes {
		if c.ID == CauseWarmup && (c.Score > 0.15 || !strings.Contains(c.Summary, "deploy of embedder v2")) {
			t.Errorf("warm-up of %s: %.2f %q", c.Model, c.Score, c.Summary)
		}
	}
	if r.Verdict == Diagnosed && r.Causes[0].ID == CauseWarmup {
		t.Errorf("the deploy's restart diagnosed as a warm-up: %s", r.Summary)
	}
}
