package triage

import (
	"context"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
)

// TestRecentChangeOnTheTestBed asks about the test bed's compute slowdown and queue surge as the
// paged engineer does, a few minutes after they start, over the default 15 minutes: the change
// point is found where the scenario starts the incident, the part after it is compared with the
// hour before it, and the incident's own cause ranks first. The same window read as one (the
// triage before the change point) answers weaker or not at all.
func TestRecentChangeOnTheTestBed(t *testing.T) {
	e, s := enginetest.Start(t)
	ctx := context.Background()
	for kind, want := range map[testbed.IncidentKind][]string{testbed.ComputeSlowdown: {CauseComputeMemory}, testbed.QueueSurge: queueSurgeCauses} {
		in, _ := s.Incident(kind)
		to := in.Start.Add(4 * time.Minute)
		o := Options{Model: "recsys-ranker", Version: in.Version, From: to.Add(-DefaultWindow), To: to}
		r, err := Diagnose(ctx, e, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s %s (%d queries) change %+v\n%s", kind, r.Verdict, causeList(r), r.Queries, r.Change, r.Summary)
		if r.Change == nil || r.Change.At.Before(in.Start) || r.Change.At.After(to) || !r.Window.Start.After(o.From) || r.Change.Covers >= 0.5 {
			t.Fatalf("%s: change %+v, window %+v", kind, r.Change, r.Window)
		}
		if r.Verdict != Diagnosed || !slices.Contains(want, r.Causes[0].ID) {
			t.Errorf("%s: want %s first: %s %s", kind, want, r.Verdict, causeList(r))
		}
		// The whole window, read as one.
		rd, err := Read(ctx, e, o)
		if err != nil {
			t.Fatal(err)
		}
		whole := Score(rd, DefaultThresholds())
		t.Logf("%s as one window: %s %s", kind, whole.Verdict, causeList(&whole))
		if whole.Verdict == Diagnosed && slices.Contains(want, whole.Causes[0].ID) && whole.Causes[0].Score >= r.Causes[0].Score {
			t.Errorf("%s: the whole window already answers %s at %.2f (after the change: %.2f): the test shows nothing", kind, want, whole.Causes[0].Score, r.Causes[0].Score)
		}
		if r.Queries != rd.Queries+2 {
			t.Errorf("%s: %d queries, want the read's %d and the detection's 2", kind, r.Queries, rd.Queries)
		}
	}
}

// TestOnePointChangeOnTheTestBed asks about the compute slowdown one minute after it starts: one
// point past the line at the history's 60 s samples. The readings after the change are that
// point's, every rate over its last scrape interval, so the compute time the cause reports is
// the scenario's own mean over that minute, not a mix with the minute before it; the diagnosis
// stands at medium confidence. A node question on the incident's GPU finds the same change.
func TestOnePointChangeOnTheTestBed(t *testing.T) {
	e, s := enginetest.Start(t)
	ctx := context.Background()
	in, _ := s.Incident(testbed.ComputeSlowdown)
	to := in.Start.Add(time.Minute)
	o := Options{Model: "recsys-ranker", From: to.Add(-DefaultWindow), To: to}
	r, err := Diagnose(ctx, e, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s %s change %+v\n%s", r.Verdict, r.Confidence, causeList(r), r.Change, r.Summary)
	if r.Change == nil || r.Change.Points != 1 || !r.Change.LastInterval || !r.Change.At.Equal(to) {
		t.Fatalf("change %+v, want one point at %s read over the last interval", r.Change, to)
	}
	if r.Verdict != Diagnosed || r.Confidence == "high" || (r.Causes[0].ID != CauseCompute && r.Causes[0].ID != CauseComputeMemory) {
		t.Fatalf("want a compute cause at medium confidence at most: %s %s %s", r.Verdict, r.Confidence, causeList(r))
	}
	now := evidenceNow(t, r.Causes[0], "mean compute time")
	want := meanOver(s, testbed.Compute, in.Instance, in.Model, in.Version, to.Add(-testbed.DefaultHistoryStep), to)
	mixed := meanOver(s, testbed.Compute, in.Instance, in.Model, in.Version, to.Add(-recentRate), to)
	t.Logf("compute now %.4f s, the last minute's truth %.4f s, the rate window's mix %.4f s", now, want, mixed)
	if math.Abs(now/want-1) > 0.02 || math.Abs(mixed/want-1) < 0.1 {
		t.Errorf("compute now %.4f s, want the last minute's %.4f s (the mix over %s is %.4f s)", now, want, recentRate, mixed)
	}

	node := Options{Node: engine.InstanceNode(in.Instance), GPU: strconv.Itoa(in.GPUs[0]), From: o.From, To: to}
	nr, err := Diagnose(ctx, e, node)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node: %s %s %s change %+v", nr.Verdict, nr.Confidence, causeList(nr), nr.Change)
	if nr.Change == nil || !nr.Change.At.Equal(to) || nr.Verdict != Diagnosed || nr.Causes[0].ID != r.Causes[0].ID {
		t.Errorf("node question: %s %s change %+v, want %s first at the same change", nr.Verdict, causeList(nr), nr.Change, r.Causes[0].ID)
	}
}

// meanOver is the scenario's mean of a segment over (from, to] at the history's samples.
func meanOver(s *testbed.Scenario, g testbed.Segment, instance, model, version string, from, to time.Time) float64 {
	_, n, sum := s.SampledHistogramIncrease(g, instance, model, version, nil, from, to, testbed.DefaultHistoryStep)
	return sum / n
}

// evidenceNow is the cause's "now" for the evidence named what.
func evidenceNow(t *testing.T, c Cause, what string) float64 {
	t.Helper()
	for _, ev := range c.Evidence {
		if ev.What == what && ev.Now != nil {
			return *ev.Now
		}
	}
	t.Fatalf("%s: no evidence %q in %+v", c.ID, what, c.Evidence)
	return 0
}

// TestGPUWentIdleBeforeTheChangePoint: the test bed's GPU loses its context at the incident's
// start; its utilisation gauge drops at once, the model's rates a point later. Asked two minutes
// in, the change point narrows the window to its last point, after the GPU stopped: the GPU still
// went idle in the window asked (the zero run is looked for from its start), and gpu_idle, which
// the model's slower requests make the model's, ranks first in the model and the node question.
func TestGPUWentIdleBeforeTheChangePoint(t *testing.T) {
	e, s := enginetest.Start(t)
	in, _ := s.Incident(testbed.GPUIdle)
	to := in.Start.Add(2 * time.Minute)
	for _, o := range []Options{
		{Model: in.Model, From: to.Add(-DefaultWindow), To: to},
		{Node: engine.InstanceNode(in.Instance), GPU: strconv.Itoa(in.GPUs[0]), From: to.Add(-DefaultWindow), To: to},
	} {
		r, err := Diagnose(context.Background(), e, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("model %q node %q: %s %s change %+v", o.Model, o.Node, r.Verdict, causeList(r), r.Change)
		if r.Change == nil || r.Change.At.After(to) || (o.Model != "" && !r.Window.Start.After(o.From)) {
			t.Errorf("model %q node %q: change %+v, window %+v: the test shows nothing", o.Model, o.Node, r.Change, r.Window)
		}
		if r.Verdict != Diagnosed || r.Causes[0].ID != CauseGPUIdle || r.Causes[0].Model != in.Model {
			t.Errorf("model %q node %q: %s %s, want gpu_idle of %s first", o.Model, o.Node, r.Verdict, causeList(r), in.Model)
		}
	}
}
