package triage

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// TestQuestionAtFifteenSecondScrapes: the brief's fleets are scraped every 15 s, and a latency
// P0 fires at once, so its triage link asks about a change one scrape old. The triage reads at
// a 1-minute step; its grid ends at the question's end, so the last 15 seconds are read. On a
// grid of whole minutes (before) the question asked 15 s after the test bed's compute slowdown
// began read nothing of it: "healthy" on a P0.
func TestQuestionAtFifteenSecondScrapes(t *testing.T) {
	if testing.Short() {
		t.Skip("writes two hours of the test bed at 15 s and serves them from Prometheus")
	}
	s := testbed.Default(testbed.DefaultEnd)
	in, _ := s.Incident(testbed.ComputeSlowdown)
	opt := expo.HistoryOptions{From: in.Start.Add(-2 * time.Hour), To: in.Start.Add(5 * time.Minute), Step: 15 * time.Second, Job: "inference"}
	targets, err := s.HistoryTargets("custom", testbed.GPUNamingInferscope, opt.From, opt.From, opt.To)
	if err != nil {
		t.Fatal(err)
	}
	promtool := promtest.RequireBinary(t, "promtool")
	dir := filepath.Join(t.TempDir(), "tsdb")
	if err := testbed.BuildHistoryTSDB(t.Context(), targets, promtool, dir, opt); err != nil {
		t.Fatal(err)
	}
	e := enginetest.OnURL(t, promtest.Start(t, promtest.Options{DataDir: dir}).URL, enginetest.Profile("custom"))
	to := in.Start.Add(15 * time.Second)
	r, err := Diagnose(t.Context(), e, Options{Model: in.Model, From: to.Add(-DefaultWindow), To: to})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s %s change %+v\n%s", r.Verdict, r.Confidence, causeList(r), r.Change, r.Summary)
	if r.Change == nil || !r.Change.At.Equal(to) || r.Change.Points != 1 {
		t.Fatalf("change %+v, want one point at %s", r.Change, to)
	}
	if r.Verdict != Diagnosed || r.Confidence == "high" || (r.Causes[0].ID != CauseCompute && r.Causes[0].ID != CauseComputeMemory) {
		t.Errorf("want a compute cause at medium confidence at most: %s %s %s", r.Verdict, r.Confidence, causeList(r))
	}
}
