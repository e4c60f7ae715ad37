package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
	"github.com/inferscope/inferscope/pkg/triage"
)

// TestReportCommand: mid-slowdown (node-b recsys, end−14h for 40 min) the resource and service
// layers are critical; --fail-on critical exits 1; a quiet hour is ok everywhere.
func TestReportCommand(t *testing.T) {
	dir, s := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	in, _ := s.Incident(testbed.ComputeSlowdown)
	at := in.Start.Add(20 * time.Minute).Format(time.RFC3339)
	args := func(extra ...string) []string {
		return append([]string{"report", "--prometheus", srv.URL, "--model", "recsys-ranker", "--quiet"}, extra...)
	}

	code, out, errOut := runCLI(t, args("--at", at, "--json")...)
	var h triage.HealthReport
	if err := json.Unmarshal([]byte(out), &h); err != nil || code != exitOK {
		t.Fatalf("slowdown: exit %d %v %s\n%s", code, err, errOut, out)
	}
	status := map[string]string{}
	for _, l := range h.Layers {
		status[l.Layer] = l.Status
	}
	if status[triage.LayerResource] != triage.StatusCritical || status[triage.LayerService] != triage.StatusCritical || h.Status != triage.StatusCritical {
		t.Fatalf("slowdown: %+v", status)
	}

	code, out, _ = runCLI(t, args("--at", at)...)
	if code != exitOK || !strings.Contains(out, "RESOURCE — is the hardware enough?  [CRIT]") || !strings.Contains(out, "CRIT  GPU memory used (fullest GPU)") ||
		!strings.Contains(out, "BUSINESS") {
		t.Fatalf("human output: exit %d\n%s", code, out)
	}
	t.Logf("\n%s", out)
	if code, _, errOut := runCLI(t, args("--at", at, "--fail-on", "critical")...); code != reportExitFailOn || !strings.Contains(errOut, "critical") {
		t.Fatalf("--fail-on critical: exit %d %q", code, errOut)
	}

	quiet := testbed.DefaultEnd.Add(-72 * time.Hour).Format(time.RFC3339)
	code, out, _ = runCLI(t, args("--at", quiet, "--fail-on", "warn")...)
	if code != exitOK || strings.Contains(out, "WARN") || strings.Contains(out, "CRIT") {
		t.Fatalf("quiet: exit %d\n%s", code, out)
	}
	t.Logf("\n%s", out)

	for _, bad := range [][]string{
		{"report", "--prometheus", srv.URL},
		args("--at", "noon"),
		args("--window", "1s"),
		args("--window", "0s"),
		args("--fail-on", "sometimes"),
	} {
		if code, _, errOut := runCLI(t, bad...); code != exitUsage || errOut == "" {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
	if code, _, _ := runCLI(t, "report", "--prometheus", "http://127.0.0.1:1", "--model", "m"); code != exitUnavailable {
		t.Errorf("unreachable Prometheus: exit %d", code)
	}
}

// TestReportCommandOnVictoria: the same slowdown is critical, and the quiet hour ok, when the
// history is served by VictoriaMetrics (before withLabel stopped naming its own label as the
// source, VictoriaMetrics 1.79 lost most latency series and the slowdown read "ok").
func TestReportCommandOnVictoria(t *testing.T) {
	vm, s := tbtest.VictoriaFor(t, testbed.TSDBOptions{})
	in, _ := s.Incident(testbed.ComputeSlowdown)
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{in.Start.Add(20 * time.Minute), triage.StatusCritical},
		{testbed.DefaultEnd.Add(-72 * time.Hour), triage.StatusOK},
	} {
		code, out, errOut := runCLI(t, "report", "--prometheus", vm.URL, "--model", "recsys-ranker", "--quiet", "--json", "--at", c.at.Format(time.RFC3339))
		var h triage.HealthReport
		if err := json.Unmarshal([]byte(out), &h); err != nil || code != exitOK {
			t.Fatalf("at %s: exit %d %v %s\n%s", c.at, code, err, errOut, out)
		}
		status := map[string]string{}
		for _, l := range h.Layers {
			status[l.Layer] = l.Status
		}
		if h.Status != c.want || (c.want == triage.StatusCritical && (status[triage.LayerResource] != c.want || status[triage.LayerService] != c.want)) {
			t.Errorf("at %s: status %s, layers %+v, want %s", c.at, h.Status, status, c.want)
		}
	}
}
