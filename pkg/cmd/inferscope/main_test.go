package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// checkWith runs a real tool on the exported text (promtool check rules, amtool check-config).
func checkWith(t *testing.T, body string, tool string, args ...string) {
	t.Helper()
	bin := promtest.RequireBinary(t, tool)
	dir := t.TempDir()
	path := filepath.Join(dir, "exported.yml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, append(args, path)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("%s %v: %v\n%s", tool, args, err, out)
	}
}

func TestExportPrometheus(t *testing.T) {
	code, out, errOut := runCLI(t, "rules", "export", "--format", "prometheus", "--latency-crit-ratio", "4", "--gpu-mem-crit", "95%")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "inferscope:latency_quantile:baseline_ratio > 4") || !strings.Contains(out, ") > 0.95\n      unless on (inferscope_node) inferscope:node_warming") {
		t.Fatalf("the flags did not reach the rules:\n%s", out)
	}
	checkWith(t, out, "promtool", "check", "rules")
}

// The gateway flags reach the network rule: on vLLM, which has no gateway histogram of its own,
// the rule is rendered only behind a gateway, its service names mapped to the models; a gateway
// flag without --gateway is a usage error, and so is an unknown gateway.
func TestExportNetworkRuleBehindAGateway(t *testing.T) {
	code, out, _ := runCLI(t, "rules", "export", "--format", "prometheus", "--profile", "vllm")
	if code != exitOK || strings.Contains(out, "InferscopeNetworkLatencyHigh") || !strings.Contains(out, "# Not rendered: network-p1") {
		t.Fatalf("without a gateway (exit %d), vLLM's file renders the network rule or does not say why:\n%s", code, out)
	}
	code, out, errOut := runCLI(t, "rules", "export", "--format", "prometheus", "--profile", "vllm", "--gateway", "ingress-nginx", "--gateway-map", "llama-svc=meta-llama/Llama-3.1-8B")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"alert: InferscopeNetworkLatencyHigh", "nginx_ingress_controller_response_duration_seconds_bucket",
		`"inferscope_gateway_model", "meta-llama/Llama-3.1-8B", "service", "llama-svc"`, `"model_name", "$1", "inferscope_gateway_model"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the rendering lacks %q", want)
		}
	}
	checkWith(t, out, "promtool", "check", "rules")
	for _, args := range [][]string{{"--gateway-metric", "x"}, {"--gateway", "haproxy"}} {
		if code, _, errOut := runCLI(t, append([]string{"rules", "export", "--format", "prometheus", "--profile", "vllm"}, args...)...); code != exitUsage || errOut == "" {
			t.Errorf("%v: exit %d, %q; want a usage error", args, code, errOut)
		}
	}
}

func TestExportAlertmanager(t *testing.T) {
	code, out, errOut := runCLI(t, "rules", "export", "--format=alertmanager", "--p0-webhook-url=https://pager.example/hook", "--p0-repeat-interval=15m")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "url: https://pager.example/hook") || !strings.Contains(out, "repeat_interval: 15m") {
		t.Fatalf("the flags did not reach the configuration:\n%s", out)
	}
	checkWith(t, out, "amtool", "check-config")
}

func TestExportGrafana(t *testing.T) {
	code, out, errOut := runCLI(t, "rules", "export", "--format", "grafana", "--datasource-uid", "ds-1", "--observation=false", "--org-id", "4")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var g alerting.GrafanaGroup
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatal(err)
	}
	if g.Title != "inferscope" || len(g.Rules) != 15 || g.Rules[0].OrgID != 4 || g.Rules[0].Labels[alerting.ObservationLabel] != "" || g.Rules[0].Data[0].DatasourceUID != "ds-1" {
		t.Fatalf("group %+v", g)
	}
}

func TestExportToFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	code, out, errOut := runCLI(t, "rules", "export", "--format", "grafana-provisioning", "--datasource-uid", "inferscope", "--output", path)
	if code != exitOK || out != "" {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("# Inferscope alert rules, Grafana-managed")) {
		t.Fatalf("file: %v %.80s", err, b)
	}
	// An output that cannot be written is a failure of the command (1), not of the command line.
	code, _, errOut = runCLI(t, "rules", "export", "--format", "prometheus", "--output", filepath.Join(t.TempDir(), "missing", "rules.yml"))
	if code != exitError || !strings.Contains(errOut, "cannot write") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// The export writes where the user points it without clobbering what is there: a symbolic link's
// target (the link stays), a device in place (/dev/full's "no space" is a failure, and the
// device stays a device), "-" to standard output.
func TestExportToSpecialTargets(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.yml")
	if err := os.WriteFile(real, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "rules.yml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "rules", "export", "--format", "prometheus", "--output", link); code != exitOK {
		t.Fatalf("symlink: exit %d: %s", code, errOut)
	}
	b, _ := os.ReadFile(real)
	fi, _ := os.Lstat(link)
	if !bytes.Contains(b, []byte("groups:")) || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symlink: target holds %.40q, link mode %v", b, fi.Mode())
	}
	if st, _ := os.Stat(real); st.Mode().Perm() != 0o600 {
		t.Errorf("the target's mode became %v", st.Mode())
	}
	if code, out, errOut := runCLI(t, "rules", "export", "--format", "prometheus", "--output", "-"); code != exitOK || !strings.Contains(out, "groups:") {
		t.Errorf("-: exit %d, %.40q %s", code, out, errOut)
	}
	if _, err := os.Stat("/dev/full"); err == nil {
		code, _, errOut := runCLI(t, "rules", "export", "--format", "prometheus", "--output", "/dev/full")
		if code != exitError || !strings.Contains(errOut, "cannot write /dev/full") {
			t.Errorf("/dev/full: exit %d: %s", code, errOut)
		}
		if fi, err := os.Stat("/dev/full"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("/dev/full is no longer a device: %v %v", fi, err)
		}
	}
}

// Every command takes --quiet, as the README promises (scripts pass it to all of them alike).
func TestEveryCommandTakesQuiet(t *testing.T) {
	for _, args := range [][]string{
		{"rules", "list"}, {"rules", "export", "--format", "prometheus"},
		{"report"}, {"triage"}, {"gate"}, {"backtest"},
	} {
		code, _, errOut := runCLI(t, append(args, "--quiet", "--help")...)
		if code != exitOK || strings.Contains(errOut, "flag provided but not defined") {
			t.Errorf("%v --quiet: exit %d: %s", args, code, errOut)
		}
	}
}

func TestCommandLineErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "inferscope needs a command"},
		{[]string{"nope"}, `unknown command "nope" for inferscope`},
		{[]string{"rules"}, "inferscope rules needs a command"},
		{[]string{"rules", "export"}, "--format is required: prometheus, alertmanager, grafana, grafana-provisioning"},
		{[]string{"rules", "export", "--format", "json"}, `unknown --format "json"`},
		{[]string{"rules", "export", "--format", "grafana"}, "--format grafana needs --datasource-uid"},
		{[]string{"rules", "export", "--format", "prometheus", "--jitter-ratio", "high"}, `invalid value "high" for flag -jitter-ratio: must be a number from 1.01 to 1000`},
		{[]string{"rules", "export", "--format", "prometheus", "--latency-warn-for", "3 minutes"}, "must be a duration such as 90s, 5m or 1h30m"},
		{[]string{"rules", "export", "--format", "prometheus", "--group", "mine"}, `must start with "inferscope"`},
		{[]string{"rules", "export", "--format", "prometheus", "--gpu-mem-warn", "0.95"}, "gpuMemCrit (0.92) must be above gpuMemWarn (0.95)"},
		{[]string{"rules", "export", "--format", "prometheus", "--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"rules", "export", "--format", "prometheus", "extra"}, `unexpected argument "extra"`},
		{[]string{"report", "--prometheus", "http://127.0.0.1:1", "--model", "m", "--max-answer-size", "lots"}, `--max-answer-size: "lots" is not a size`},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 with %q (stdout %.60q)", tc.args, code, errOut, tc.want, out)
		}
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := runCLI(t, "rules", "export", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--format FORMAT", "grafana-provisioning", "--latency-crit-ratio N", "(default 3)", "--gpu-mem-crit RATIO", "--profile custom|vllm|triton|torchserve|tgi", "Exit status: 0 done; 1", "2 the command line is wrong"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if code, out, _ := runCLI(t, "--help"); code != exitOK || !strings.Contains(out, "inferscope rules export --format FORMAT") {
		t.Errorf("top help: %d %s", code, out)
	}
}

func TestList(t *testing.T) {
	code, out, _ := runCLI(t, "rules", "list", "--profile", "vllm")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out, "cache-drop-p2") || strings.Contains(out, "cache-drop-p2       P2        15m  (not available") {
		t.Fatalf("vLLM has cache metrics:\n%s", out)
	}
	// vLLM's load state is its sleep state (vllm:engine_sleep_state{sleep_state="awake"}).
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "warmup-long-p2") && strings.Contains(line, "not available") {
			t.Fatalf("vLLM has a load state:\n%s", out)
		}
	}
	if !strings.Contains(out, "warmup-long-p2") {
		t.Fatalf("no warm-up rule:\n%s", out)
	}
}
