package triage

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
)

// TestLongWindowTriagesEachChange (symptom 5): recsys-ranker over the test bed's last 24 hours.
// The window is split at its change points and each is triaged on its own: the network jitter,
// the compute slowdown and the queue surge are each found, on their instance, with their own
// cause first; the text-embedder's idle GPU 6 on node-a is never a cause of recsys-ranker.
func TestLongWindowTriagesEachChange(t *testing.T) {
	e, s := enginetest.Start(t)
	to := testbed.DefaultEnd
	r, err := Diagnose(context.Background(), e, Options{Model: "recsys-ranker", From: to.Add(-24 * time.Hour), To: to})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (%d queries): %s", r.Verdict, r.Queries, r.Summary)
	for _, ep := range r.Episodes {
		t.Logf("episode %s–%s %s ×%.1f: %s %s", ep.Window.Start.Format("15:04"), ep.Window.End.Format("15:04"), ep.Where, ep.Peak, ep.Verdict, ep.Summary)
	}
	if r.Verdict != Diagnosed || len(r.Episodes) == 0 {
		t.Fatalf("verdict %s with %d episodes", r.Verdict, len(r.Episodes))
	}
	want := map[testbed.IncidentKind][]string{testbed.NetworkJitter: {CauseNetwork}, testbed.ComputeSlowdown: {CauseComputeMemory}, testbed.QueueSurge: queueSurgeCauses}
	for kind, id := range want {
		in, _ := s.Incident(kind)
		found := false
		for _, ep := range r.Episodes {
			if ep.Window.End.Before(in.Start) || ep.Window.Start.After(in.End) {
				continue
			}
			found = true
			if ep.Verdict != Diagnosed || !slices.Contains(id, ep.Causes[0].ID) || ep.Causes[0].Instance != in.Instance {
				t.Errorf("%s at %s: want %s first on %s, got %s: %s", kind, in.Start.Format("15:04"), id, in.Instance, ep.Verdict, ep.Summary)
			}
		}
		if !found {
			t.Errorf("%s at %s: no change point found", kind, in.Start.Format("15:04"))
		}
	}
	for _, c := range r.Causes {
		if c.ID == CauseGPUIdle {
			t.Errorf("an idle GPU is a cause of recsys-ranker: %+v", c)
		}
		if c.Window == nil {
			t.Errorf("cause %s has no window", c.ID)
		}
	}
	if !strings.Contains(r.Summary, "change point(s) in the 1d window") {
		t.Errorf("summary %q", r.Summary)
	}
}
