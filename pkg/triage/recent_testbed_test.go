package triage

import (
	"context"
	"testing"
	"time"

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
	for kind, want := range map[testbed.IncidentKind]string{testbed.ComputeSlowdown: CauseComputeMemory, testbed.QueueSurge: CauseQueue} {
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
		if r.Verdict != Diagnosed || r.Causes[0].ID != want {
			t.Errorf("%s: want %s first: %s %s", kind, want, r.Verdict, causeList(r))
		}
		// The whole window, read as one.
		rd, err := Read(ctx, e, o)
		if err != nil {
			t.Fatal(err)
		}
		whole := Score(rd, DefaultThresholds())
		t.Logf("%s as one window: %s %s", kind, whole.Verdict, causeList(&whole))
		if whole.Verdict == Diagnosed && whole.Causes[0].ID == want && whole.Causes[0].Score >= r.Causes[0].Score {
			t.Errorf("%s: the whole window already answers %s at %.2f (after the change: %.2f): the test shows nothing", kind, want, whole.Causes[0].Score, r.Causes[0].Score)
		}
		if r.Queries != rd.Queries+2 {
			t.Errorf("%s: %d queries, want the read's %d and the detection's 2", kind, r.Queries, rd.Queries)
		}
	}
}
