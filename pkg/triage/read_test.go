package triage

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
)

// TestIdleAtEnd: a GPU is idle at the window's end when its utilisation sits at zero from some
// point of the window to its last point there, over two points or more; a single zero is one
// scrape's blip, and a GPU that went back to work is not idle.
func TestIdleAtEnd(t *testing.T) {
	from := time.Unix(1_800_000_000, 0)
	to := from.Add(5 * time.Minute)
	ts := func(n int) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = from.Add(time.Duration(i) * time.Minute).UnixMilli()
		}
		return out
	}
	nan := math.NaN()
	for _, c := range []struct {
		name string
		v    []float64
		want bool
	}{
		{"idle through the window", []float64{0, 0, 0, 0, 0, 0}, true},
		{"stopped in the window", []float64{0.8, 0.8, 0.8, 0.8, 0, 0}, true},
		{"one zero at the end", []float64{0.8, 0.8, 0.8, 0.8, 0.8, 0}, false},
		{"back at work", []float64{0.8, 0, 0, 0, 0.7, 0.8}, false},
		{"a gap in the series does not end the run", []float64{0.8, 0.8, 0, nan, 0, nan}, true},
		{"the point at from is before the window", []float64{0, 0.8, 0.8, 0.8, 0.8, 0.8}, false},
		{"working", []float64{0.8, 0.8, 0.8, 0.8, 0.8, 0.8}, false},
	} {
		if got := idleAtEnd(ts(len(c.v)), c.v, from, to); got != c.want {
			t.Errorf("%s: idleAtEnd %v, want %v", c.name, got, c.want)
		}
	}
}

// TestScoreMemoryClimbOnTheGPUAsked: asked about GPU 6 of node-a (a GPU alert's link), memory that
// climbed from 80 % to a 93 % peak in the window is memory pressure before compute moves, and
// names no model (GPU series carry none). Asked about the model, the same reading is the node's
// fullest GPU, which may serve another model: not raised. Memory standing at 93 % through the
// hour before is the node's level: not raised either.
func TestScoreMemoryClimbOnTheGPUAsked(t *testing.T) {
	climb := func(in *Instance) { in.GPUMem, in.GPUMemPeak = Pair{0.80, 0.906}, 0.93 }
	node := func(mutate func(in *Instance)) *Readings {
		rd := readings("", func(_ *Subject, in *Instance) { mutate(in) })
		rd.Node, rd.GPU = "node-a", "6"
		rd.Subjects, rd.Instances = rd.Subjects[:1], rd.Instances[:1]
		return rd
	}
	nr := &NodeReadings{Node: "node-a", GPU: "6", Window: Span{tFrom, tEnd}, Before: Span{tFrom.Add(-time.Hour), tFrom},
		Models: []*Readings{node(climb)}}
	r := ScoreNode(nr, DefaultThresholds())
	t.Logf("node: %s %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseComputeMemory || r.Causes[0].Model != "" || !strings.Contains(r.Causes[0].Summary, "climbed past its 92 % critical line") {
		t.Errorf("want compute_memory on the GPU, no model: %s %+v", r.Verdict, r.Causes)
	}
	if r := Score(readings("", func(_ *Subject, in *Instance) { climb(in) }), DefaultThresholds()); r.Verdict == Diagnosed {
		t.Errorf("a model question diagnosed the node's memory: %s", causeList(&r))
	}
	nr.Models = []*Readings{node(func(in *Instance) { in.GPUMem, in.GPUMemPeak = Pair{0.925, 0.93}, 0.935 })}
	if r := ScoreNode(nr, DefaultThresholds()); r.Verdict == Diagnosed && r.Causes[0].ID == CauseComputeMemory {
		t.Errorf("standing memory diagnosed: %s", causeList(&r))
	}
}

// TestScoreTrafficSpreadFromALostInstance: node-b stopped serving and its 100 req/s spread over
// the three others (each 1.33×, the model's total unchanged). Asked about node-a (where the
// latency alert fired), the others' gain does not hide node-b's loss: node-a's extra traffic is
// moved, not a surge, and its queue is the lost capacity's — also while the model's total rose
// 10 % with the daily curve, where the total alone (the others' net change: −3 req/s) cannot
// tell it, and the queue stays a candidate.
func TestScoreTrafficSpreadFromALostInstance(t *testing.T) {
	rd := readings("", func(s *Subject, in *Instance) {
		s.Queue.Now, s.P95.Now, s.BaselineRatio = 0.0136, 0.04, 1.6
		s.QPS.Now, in.QPS.Now = 133, 133
	})
	rd.Instance, rd.Subjects, rd.Instances = "node-a:8000", rd.Subjects[:1], rd.Instances[:1]
	rd.ModelQPS = Pair{400, 430}
	rd.ModelByInstance = map[string]Pair{"node-a:8000": {100, 133}, "node-b:8000": {100, 0}, "node-c:8000": {100, 148}, "node-d:8000": {100, 149}}
	r := Score(rd, DefaultThresholds())
	t.Logf("%s: %s; %s", r.Verdict, causeList(&r), r.Summary)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseQueue || !strings.Contains(r.Causes[0].Summary, "lost capacity") {
		t.Errorf("want queue (lost capacity) first: %s %s", r.Verdict, causeList(&r))
	}
	for _, c := range r.Causes {
		if c.ID == CauseTrafficSurge && c.Score >= DefaultThresholds().DiagnosedScore {
			t.Errorf("the spread read as a surge: %q", c.Summary)
		}
	}
	rd.ModelByInstance = nil
	if r := Score(rd, DefaultThresholds()); r.Verdict == Diagnosed {
		t.Errorf("from the total alone: %s %s", r.Verdict, causeList(&r))
	}
}

// TestScoreEveningDeclineIsNotMovedTraffic: node-a's traffic stepped 1.6× (a client's burst)
// in an evening hour where the model's three other instances each serve 15 % less than in the
// hour before (the daily curve, 45 req/s in all: more than half node-a's gain). No instance lost
// its traffic: node-a's extra requests are a surge, not moved; with one of them stopped, they
// are moved.
func TestScoreEveningDeclineIsNotMovedTraffic(t *testing.T) {
	rd := readings("", func(s *Subject, in *Instance) {
		s.Queue.Now, s.P95.Now, s.BaselineRatio = 0.0288, 0.06, 2.4
		s.QPS.Now, in.QPS.Now, in.QPSBaseline = 160, 160, 100
	})
	rd.Instance, rd.Subjects, rd.Instances = "node-a:8000", rd.Subjects[:1], rd.Instances[:1]
	rd.ModelQPS = Pair{400, 415}
	rd.ModelByInstance = map[string]Pair{"node-a:8000": {100, 160}, "node-b:8000": {100, 85}, "node-c:8000": {100, 85}, "node-d:8000": {100, 85}}
	r := Score(rd, DefaultThresholds())
	t.Logf("decline: %s: %s", r.Verdict, causeList(&r))
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseTrafficSurge {
		t.Errorf("want traffic_surge first: %s %s", r.Verdict, causeList(&r))
	}
	rd.ModelByInstance["node-b:8000"] = Pair{100, 0}
	r = Score(rd, DefaultThresholds())
	t.Logf("stopped: %s: %s", r.Verdict, causeList(&r))
	if r.Causes[0].ID != CauseQueue {
		t.Errorf("want queue (lost capacity) first: %s %s", r.Verdict, causeList(&r))
	}
}

// TestLevelOfTheHourBefore: a service reading compares the window's mean with the level the hour
// before held, its median. A neighbour's lost capacity sent traffic here for twenty minutes of
// that hour (the queue at 27.7 ms, 3.5 ms otherwise): its mean, 11.6 ms, would hide a queue
// that stepped to 13.9 ms in the window (TorchServe's ranker in seed 4's corpus, answered no
// direction); its median keeps the 3.5 ms the hour held.
func TestLevelOfTheHourBefore(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	from := start.Add(time.Hour)
	r := &reader{rd: &Readings{Before: Span{start, from}, Window: Span{from, from.Add(6 * time.Minute)}}}
	var s engine.Series
	for i := 1; i <= 66; i++ {
		v := 0.0035
		switch {
		case i > 15 && i <= 35:
			v = 0.0277
		case i > 60:
			v = 0.0139
		}
		s.T = append(s.T, start.Add(time.Duration(i)*time.Minute).UnixMilli())
		s.V = append(s.V, v)
	}
	got := r.level(s)
	if got.Before != 0.0035 || math.Abs(got.Now-0.0139) > 1e-12 {
		t.Errorf("level %+v, want the hour's 0.0035 against the window's 0.0139", got)
	}
	if mean := r.pair(s, mean); !(mean.Before > 0.011) {
		t.Errorf("the hour's mean %g: the test shows nothing", mean.Before)
	}
}
