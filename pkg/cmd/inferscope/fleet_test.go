package main

import (
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// TestReportAndTriageOnFleet: on one Prometheus holding the six servers, report and triage of a
// vLLM model answer exactly what they answer on a Prometheus holding the vLLM server alone.
// serveNaming serves the test bed's history in a naming and returns the Prometheus URL.
func serveNaming(t *testing.T, naming string) (string, *testbed.Scenario) {
	t.Helper()
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: naming})
	return promtest.Start(t, promtest.Options{DataDir: dir}).URL, s
}

func TestReportAndTriageOnFleet(t *testing.T) {
	fleet, s := serveNaming(t, expo.FleetName)
	alone, _ := serveNaming(t, expo.FleetPart("vllm"))
	in, _ := s.Incident(testbed.QueueSurge)
	model := expo.FleetModel("vllm", in.Model)
	at := in.Start.Add(10 * time.Minute).Format(time.RFC3339)
	for _, args := range [][]string{
		{"report", "--model", model, "--at", at, "--json", "--quiet"},
		{"triage", "--model", model, "--to", at, "--last", "15m", "--json", "--quiet"},
	} {
		codeF, outF, errF := runCLI(t, append(args, "--prometheus", fleet)...)
		codeA, outA, errA := runCLI(t, append(args, "--prometheus", alone)...)
		if codeF != codeA || outF != outA || len(outA) < 200 {
			t.Errorf("%s: the fleet answers %d %s\n%.800s\nthe server alone %d %s\n%.800s", args[0], codeF, errF, outF, codeA, errA, outA)
		}
	}
}

// TestGateOnFleet: the release gate of a Triton model (Triton's models have versions) answers on
// the fleet exactly what it answers on a Prometheus holding the Triton server alone.
func TestGateOnFleet(t *testing.T) {
	fleet, s := serveNaming(t, expo.FleetName)
	alone, _ := serveNaming(t, expo.FleetPart("triton"))
	in, ok := s.Incident(testbed.CanarySlower)
	if !ok {
		t.Fatal("no canary in the scenario")
	}
	args := []string{"gate", "--model", expo.FleetModel("triton", in.Model), "--baseline", "v1.4.0", "--canary", in.Version,
		"--at", testbed.DefaultEnd.Format(time.RFC3339), "--json", "--quiet"}
	codeF, outF, errF := runCLI(t, append(args, "--prometheus", fleet)...)
	codeA, outA, errA := runCLI(t, append(args, "--prometheus", alone)...)
	if codeF != codeA || outF != outA || len(outA) < 200 {
		t.Errorf("the fleet answers %d %s\n%.800s\nthe server alone %d %s\n%.800s", codeF, errF, outF, codeA, errA, outA)
	}
	if codeA != gateExitFail {
		t.Errorf("the canary is 15 %% slower: exit %d, want the gate's fail (%d)\n%.600s", codeA, gateExitFail, outA)
	}
}

// A mistyped model is an error listing the models Prometheus has, never a healthy report
// (exit 2, whatever --fail-on says), in report, triage and gate alike.
func TestUnknownModelIsAnError(t *testing.T) {
	url, _ := serveNaming(t, "")
	for _, args := range [][]string{
		{"report", "--model", "recsys-rankr", "--fail-on", "warn", "--quiet"},
		{"triage", "--model", "recsys-rankr", "--quiet"},
		{"gate", "--model", "recsys-rankr", "--baseline", "v1.4.0", "--canary", "v1.5.0", "--quiet"},
	} {
		code, out, errOut := runCLI(t, append(args, "--prometheus", url)...)
		if code != exitUsage || !strings.Contains(errOut, `--model: unknown model "recsys-rankr": Prometheus has series of recsys-ranker, text-embedder`) || out != "" {
			t.Errorf("%s: exit %d, %q, stdout %.80q", args[0], code, errOut, out)
		}
	}
}

// TestConnectionLabelFlags: the label renames and the warm-up window are checked as the data
// source's settings are.
func TestConnectionLabelFlags(t *testing.T) {
	for _, bad := range [][]string{
		{"--profile-label", "tgi=model_name"},
		{"--profile-label", "onnx.model=m"},
		{"--profile-label", "tgi.gpu=g"},
		{"--profile-label", "tgi.model=model-name"},
		{"--model-label", "model-name"},
		{"--warmup-window", "2h"},
	} {
		args := append([]string{"report", "--prometheus", "http://127.0.0.1:1", "--model", "m"}, bad...)
		if code, _, errOut := runCLI(t, args...); code != exitUsage || errOut == "" {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
}

// TestUnknownSubjectIsAnError: a version, instance, node or GPU Prometheus has no series of is
// a usage error (exit 2) naming its flag and listing the names Prometheus has, never a healthy
// answer; several values where a command takes one ("a|b") are refused, never read as a
// literal name or as one subject.
func TestUnknownSubjectIsAnError(t *testing.T) {
	url, _ := serveNaming(t, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--model", "recsys-ranker", "--version", "v9.9.9", "--fail-on", "warn"},
			`--version: unknown version "v9.9.9" of recsys-ranker: Prometheus has series of v1.4.0, v1.5.0`},
		{[]string{"triage", "--model", "recsys-ranker", "--instance", "node-z:8000"},
			`--instance: unknown instance "node-z:8000" of recsys-ranker: Prometheus has series of node-a:8000`},
		{[]string{"triage", "--node", "node-z"}, `--node: unknown node "node-z": Prometheus has series of node-a`},
		{[]string{"triage", "--node", "node-a", "--gpu", "12"}, `--gpu: unknown GPU "12" on node node-a: Prometheus has series of 0, 1, 2, 3, 4, 5, 6, 7`},
		{[]string{"gate", "--model", "recsys-ranker", "--baseline", "v1.4.0", "--canary", "v1.6.0"},
			`--canary: unknown version "v1.6.0" of recsys-ranker: Prometheus has series of v1.4.0, v1.5.0`},
		{[]string{"triage", "--model", "recsys-ranker|text-embedder"},
			`model "recsys-ranker|text-embedder" names 2 values (recsys-ranker, text-embedder): it takes one`},
		{[]string{"gate", "--model", "recsys-ranker", "--baseline", "v1.4.0|v1.5.0", "--canary", "v1.5.0"},
			`baseline "v1.4.0|v1.5.0" names 2 values (v1.4.0, v1.5.0): it takes one`},
		{[]string{"report", "--model", "recsys-ranker|text-embedder"},
			`model "recsys-ranker|text-embedder" names 2 values`},
	} {
		code, out, errOut := runCLI(t, append(c.args, "--quiet", "--prometheus", url)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%v: exit %d, %q, stdout %.80q; want %q", c.args, code, errOut, out, c.want)
		}
	}
}
