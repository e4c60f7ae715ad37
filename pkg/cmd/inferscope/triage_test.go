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

// TestTriageCommand: the queue surge (node-a recsys v1.4.0 from end−8h) is diagnosed, its traffic
// or its queue first (both in its truth: traffic ×1.5 on a batching that lets the queue grow),
// with the queue's evidence (exit 0, JSON and human output); a quiet window is healthy (exit 0); the text-embedder on
// node-b during the recsys compute slowdown sees its node's GPU memory above 92 % but nothing of
// its own that explains anything: no direction, exit 5.
func TestTriageCommand(t *testing.T) {
	dir, _ := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	surge := testbed.DefaultEnd.Add(-8 * time.Hour)
	args := func(extra ...string) []string {
		return append([]string{"triage", "--prometheus", srv.URL, "--model", "recsys-ranker"}, extra...)
	}

	code, out, errOut := runCLI(t, args("--version", "v1.4.0", "--to", surge.Add(15*time.Minute).Format(time.RFC3339), "--last", "5m", "--json")...)
	var r triage.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitOK {
		t.Fatalf("surge: exit %d %v\n%s\n%s", code, err, out, errOut)
	}
	if r.Verdict != triage.Diagnosed || (r.Causes[0].ID != triage.CauseQueue && r.Causes[0].ID != triage.CauseTrafficSurge) || r.Window.Duration != "5m" {
		t.Fatalf("surge: %s %+v", r.Verdict, r.Causes)
	}
	// Progress lines on standard error (not a terminal: one line per step).
	if !strings.Contains(errOut, "triage: [1/3]") || !strings.Contains(errOut, "triage: [3/3]") {
		t.Errorf("progress: %q", errOut)
	}

	code, out, errOut = runCLI(t, args("--from", surge.Add(10*time.Minute).Format(time.RFC3339), "--to", surge.Add(15*time.Minute).Format(time.RFC3339), "--quiet")...)
	if code != exitOK || errOut != "" || !strings.Contains(out, ": DIAGNOSED") || !(strings.Contains(out, "1  queue") || strings.Contains(out, "1  traffic_surge")) ||
		!strings.Contains(out, "queue share of service time") || !strings.Contains(out, "/d/inferscope-overview/?viewPanel=panel-23") ||
		!strings.Contains(out, "[0–2 min]") {
		t.Fatalf("human output: exit %d %q\n%s", code, errOut, out)
	}
	t.Logf("\n%s", out)

	quiet := testbed.DefaultEnd.Add(-72 * time.Hour)
	code, out, _ = runCLI(t, args("--to", quiet.Format(time.RFC3339), "--quiet")...)
	if code != exitOK || !strings.Contains(out, ": HEALTHY") {
		t.Fatalf("quiet: exit %d\n%s", code, out)
	}

	// text-embedder on node-b during recsys-ranker's memory climb there: its own requests show
	// nothing, so the memory (GPU series carry no model) is a notice and the model healthy; with
	// the full GPU named, that GPU is the subject: something is wrong and no cause stands out.
	slow := testbed.DefaultEnd.Add(-14 * time.Hour)
	embedder := func(extra ...string) (int, string, string) {
		return runCLI(t, append([]string{"triage", "--prometheus", srv.URL, "--model", "text-embedder", "--instance", "node-b:8000", "--quiet",
			"--from", slow.Add(10 * time.Minute).Format(time.RFC3339), "--to", slow.Add(15 * time.Minute).Format(time.RFC3339)}, extra...)...)
	}
	code, out, errOut = embedder()
	if code != exitOK || !strings.Contains(out, ": HEALTHY") || !strings.Contains(out, "GPU memory on node-b is past its line, but none of its requests there show it") {
		t.Fatalf("unfelt memory: exit %d %q\n%s", code, errOut, out)
	}
	code, out, errOut = embedder("--gpu", "0")
	if code != triageExitNoDirection || !strings.Contains(out, ": NO DIRECTION") || !strings.Contains(out, "GPU memory 93 % on node-b") ||
		!strings.Contains(errOut, "triage: no direction") {
		t.Fatalf("no direction: exit %d %q\n%s", code, errOut, out)
	}

	// A GPU alert's question: node-a's GPU 6 asleep (from end−11h), no model named.
	idle := testbed.DefaultEnd.Add(-11 * time.Hour)
	code, out, errOut = runCLI(t, "triage", "--prometheus", srv.URL, "--node", "node-a", "--gpu", "6",
		"--from", idle.Add(10*time.Minute).Format(time.RFC3339), "--to", idle.Add(15*time.Minute).Format(time.RFC3339))
	if code != exitOK || !strings.Contains(out, "node node-a (recsys-ranker, text-embedder), GPU 6") || !strings.Contains(out, ": DIAGNOSED") ||
		!strings.Contains(out, "1  gpu_idle") || !strings.Contains(out, "text-embedder node-a:8000") ||
		!strings.Contains(out, "GPU 6 of node-a (the GPU asked about") || !strings.Contains(errOut, "which models serve node node-a") {
		t.Fatalf("node: exit %d %q\n%s", code, errOut, out)
	}
	t.Logf("\n%s", out)
	code, out, _ = runCLI(t, "triage", "--prometheus", srv.URL, "--node", "node-a", "--gpu", "6", "--quiet", "--json",
		"--from", idle.Add(10*time.Minute).Format(time.RFC3339), "--to", idle.Add(15*time.Minute).Format(time.RFC3339))
	r = triage.Report{}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitOK || r.Node != "node-a" || r.GPU != "6" ||
		r.Causes[0].ID != triage.CauseGPUIdle || r.Causes[0].Model != "text-embedder" {
		t.Fatalf("node --json: exit %d %v %+v", code, err, r.Causes)
	}

	for _, bad := range [][]string{
		{"triage", "--model", "m"}, // no --prometheus
		args("--gpu", "6"),         // a GPU needs its node
		{"triage", "--prometheus", srv.URL, "--node", "node-a", "--version", "v1"},
		{"triage", "--prometheus", srv.URL, "--node", "node-a", "--instance", "node-b:8000"},
		args("--from", "yesterday"),
		args("--last", "soon"),
		args("--from", quiet.Format(time.RFC3339), "--last", "15m"),
		args("--from", quiet.Format(time.RFC3339), "--to", quiet.Add(-time.Hour).Format(time.RFC3339)),
		{"triage", "--prometheus", srv.URL},
	} {
		if code, _, errOut := runCLI(t, bad...); code != exitUsage || errOut == "" {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
	if code, _, errOut := runCLI(t, "triage", "--prometheus", "http://127.0.0.1:1", "--model", "m", "--quiet"); code != exitUnavailable {
		t.Errorf("unreachable Prometheus: exit %d %q", code, errOut)
	}
}

// TestTriageHelp: the help names the exit codes and flags.
func TestTriageHelp(t *testing.T) {
	code, out, _ := runCLI(t, "triage", "--help")
	if code != exitOK || !strings.Contains(out, "5 no direction") || !strings.Contains(out, "--last DURATION") ||
		!strings.Contains(out, "--node N [--gpu G]") || !strings.Contains(out, "--gpu G") {
		t.Fatalf("help: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "report", "--help")
	if code != exitOK || !strings.Contains(out, "--fail-on") || !strings.Contains(out, "Exit status") {
		t.Fatalf("help: exit %d\n%s", code, out)
	}
}
