package alerting

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// The renderings checked by the real tools: promtool check rules for every profile and GPU
// naming, amtool check-config, and amtool's routing test for each severity.

func tool(t *testing.T, dir, name string, args ...string) (string, error) {
	t.Helper()
	bin := promtest.RequireBinary(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String() + errOut.String(), err
	}
	return out.String(), nil
}

func TestPromtoolCheckRulesEveryProfile(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Params)
	}{
		{"custom", func(*Params) {}},
		{"custom dcgm", func(p *Params) { p.GPUNaming = "dcgm" }},
		{"custom renamed labels", func(p *Params) { p.ModelLabel, p.VersionLabel, p.InstanceLabel = "app", "rev", "pod" }},
		{"vllm", func(p *Params) { p.Profile = "vllm" }},
		{"triton", func(p *Params) { p.Profile = "triton" }},
		{"torchserve", func(p *Params) { p.Profile = "torchserve" }},
		{"tgi", func(p *Params) { p.Profile = "tgi" }},
		{"observation off", func(p *Params) { p.Observation = false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Defaults()
			tc.edit(&p)
			body, err := RenderPrometheus(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := PrometheusRules(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range f.Groups[0].Rules {
				if _, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr); err != nil {
					t.Fatalf("%s%s: %v\n%s", r.Record, r.Alert, err, r.Expr)
				}
			}
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "rules.yml"), body)
			out, err := tool(t, dir, "promtool", "check", "rules", "rules.yml")
			if err != nil || !strings.Contains(out, "SUCCESS") {
				t.Fatalf("promtool check rules: %v\n%s", err, out)
			}
		})
	}
}

func TestAmtoolCheckConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Params)
	}{
		{"receivers to fill", func(*Params) {}},
		{"webhooks", func(p *Params) {
			p.P0WebhookURL, p.P1WebhookURL = "https://pager.example/hook", "https://chat.example/hook"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Defaults()
			tc.edit(&p)
			body, err := RenderAlertmanager(p)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "am.yml"), body)
			out, err := tool(t, dir, "amtool", "check-config", "am.yml")
			if err != nil || !strings.Contains(out, "SUCCESS") || !strings.Contains(out, "4 inhibit rules") {
				t.Fatalf("amtool check-config: %v\n%s", err, out)
			}
		})
	}
}

func TestAmtoolRoutesEachSeverity(t *testing.T) {
	body, err := RenderAlertmanager(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "am.yml"), body)
	for _, tc := range []struct {
		labels []string
		want   string
	}{
		{[]string{"inferscope_managed=true", "severity=P0"}, ReceiverP0},
		{[]string{"inferscope_managed=true", "severity=P1"}, ReceiverP1},
		{[]string{"inferscope_managed=true", "severity=P2"}, ReceiverNull},
		{[]string{"inferscope_managed=true", "severity=P0", "inferscope_observation=true"}, ReceiverNull},
		{[]string{"inferscope_managed=true", "severity=P1", "inferscope_observation=true"}, ReceiverNull},
	} {
		out, err := tool(t, dir, "amtool", append([]string{"config", "routes", "test", "--config.file=am.yml"}, tc.labels...)...)
		if err != nil {
			t.Fatalf("amtool config routes test %v: %v\n%s", tc.labels, err, out)
		}
		if got := strings.TrimSpace(out); got != tc.want {
			t.Errorf("%v routes to %q, want %q", tc.labels, got, tc.want)
		}
	}
}
