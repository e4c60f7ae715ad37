package testbed_test

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// exposition is every history target's text at t, one block per target.
func exposition(t *testing.T, s *testbed.Scenario, at time.Time) []byte {
	t.Helper()
	tg, err := s.HistoryTargets("custom", testbed.GPUNamingInferscope, s.Start(), s.End().AddDate(0, 0, -2), s.End())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, x := range tg {
		if err := expo.WriteText(&buf, x.Families, at, append([]expo.Label{{Name: "instance", Value: x.Instance}}, x.Labels...)); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

var labelValue = regexp.MustCompile(`="([^"]*)"`)

// A scaled group is the default fleet renamed: at every incident and at the end, its exposition
// is Default's with the label values mapped by Relabel — the same truth model and incidents, and
// proof that the renaming the scaled TSDB applies to Default's stored history is complete.
func TestScaledGroupIsDefaultRenamed(t *testing.T) {
	groups, err := testbed.Scaled(testbed.DefaultEnd, 14)
	if err != nil {
		t.Fatal(err)
	}
	def := testbed.Default(testbed.DefaultEnd)
	if got := exposition(t, groups[0], def.End()); !bytes.Equal(got, exposition(t, def, def.End())) {
		t.Fatal("group 0 of a scaled fleet differs from Default")
	}
	g := groups[13] // model copy 13 mod 12 = 1
	if got, want := g.Instances(), []string{"node-a-13:8000", "node-b-13:8000", "node-c-13:8000"}; !slices.Equal(got, want) {
		t.Errorf("group 13's instances %v, want %v", got, want)
	}
	if got, want := g.Models(), []string{"recsys-ranker-01", "text-embedder-01"}; !slices.Equal(got, want) {
		t.Errorf("group 13's models %v, want %v", got, want)
	}
	r := testbed.Relabel(def, g)
	at := []time.Time{def.End()}
	for _, in := range def.Incidents() {
		at = append(at, in.Start.Add(in.End.Sub(in.Start)/2).Truncate(time.Minute))
	}
	for i, in := range g.Incidents() {
		if d := def.Incidents()[i]; !in.Start.Equal(d.Start) || in.Instance != r.Value(d.Instance) || in.Kind != d.Kind {
			t.Errorf("incident %d: %+v, want Default's %+v renamed", i, in, d)
		}
	}
	for _, ts := range at {
		if ts.After(def.End()) {
			ts = def.End()
		}
		want := labelValue.ReplaceAllFunc(exposition(t, def, ts), func(m []byte) []byte {
			return []byte(fmt.Sprintf("=%q", r.Value(string(m[2:len(m)-1]))))
		})
		got := exposition(t, g, ts)
		if !bytes.Equal(got, want) {
			gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
			for i := range min(len(gl), len(wl)) {
				if !bytes.Equal(gl[i], wl[i]) {
					t.Fatalf("at %s line %d: group 13 has\n%s\nDefault renamed has\n%s", ts.Format(time.RFC3339), i, gl[i], wl[i])
				}
			}
			t.Fatalf("at %s: %d lines, Default renamed has %d", ts.Format(time.RFC3339), len(gl), len(wl))
		}
	}
	if _, err := testbed.Scaled(testbed.DefaultEnd, 101); err == nil {
		t.Error("a scale of 101 was accepted")
	}
}

// The scaled TSDB holds every group's series, and Prometheus reads each group's truth from it.
func TestScaledTSDBHoldsEveryGroup(t *testing.T) {
	const factor = 3
	dir, groups := tbtest.ScaledTSDB(t, factor)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	end := groups[0].End()
	perGroup := scalar(t, srv.URL, `count({instance=~"node-[abc]:.*"})`, end)
	total := scalar(t, srv.URL, `count({__name__=~".+"})`, end)
	if total != factor*perGroup || perGroup < 1000 {
		t.Errorf("%g series in all, %g in group 0: want %d× as many", total, perGroup, factor)
	}
	surge, _ := groups[0].Incident(testbed.QueueSurge)
	at := surge.Start.Add(15 * time.Minute)
	for _, g := range groups {
		in, _ := g.Incident(testbed.QueueSurge)
		sel := fmt.Sprintf(`model_name=%q,instance=%q`, in.Model, in.Instance)
		within(t, in.Instance+" QPS in the surge", scalar(t, srv.URL, `sum(rate(inference_requests_total{`+sel+`}[5m]))`, at),
			g.MeanQPS(in.Instance, in.Model, "", at.Add(-window), at), 1e-9)
		// 7 days before, the earliest the baseline reads: the history starts as early as Default's.
		old := at.Add(-7 * 24 * time.Hour)
		within(t, in.Instance+" QPS 7 days before", scalar(t, srv.URL, `sum(rate(inference_requests_total{`+sel+`}[5m]))`, old),
			g.MeanQPS(in.Instance, in.Model, "", old.Add(-window), old), 1e-9)
	}
}
