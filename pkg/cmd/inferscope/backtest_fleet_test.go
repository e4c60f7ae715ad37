package main

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/backtest"
	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// TestBacktestOnFleet: the backtest over one Prometheus holding the five servers answers, for
// each service rule the server's profile can feed, the same firing episodes on the vLLM and on the Triton models as the
// backtest over a Prometheus holding that server alone (labels, start, end, peak, overlaps),
// each fleet episode naming its server; the queue surge is among them on both servers.
func TestBacktestOnFleet(t *testing.T) {
	fleet, s := serveNaming(t, expo.FleetName)
	surge, ok := s.Incident(testbed.QueueSurge)
	if !ok {
		t.Fatal("no queue surge in the scenario")
	}
	args := []string{"backtest", "--from", surge.Start.Add(-30 * time.Minute).Format(time.RFC3339),
		"--to", surge.End.Add(30 * time.Minute).Format(time.RFC3339), "--json", "--quiet"}
	report := func(url string) backtest.Report {
		t.Helper()
		code, out, errOut := runCLI(t, append(args, "--prometheus", url)...)
		var r backtest.Report
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("backtest: exit %d %s\n%.600s", code, errOut, out)
		}
		return r
	}
	onFleet := report(fleet)
	byID := map[string]backtest.RuleReport{}
	for _, rr := range onFleet.Rules {
		byID[rr.ID] = rr
	}
	for _, server := range []string{"vllm", "triton"} {
		t.Run(server, func(t *testing.T) {
			alone, _ := serveNaming(t, expo.FleetPart(server))
			onAlone := report(alone)
			episodes := 0
			perRule := map[string]int{}
			surged := false
			for _, want := range onAlone.Rules {
				// GPU rules read the node's GPUs, whatever server is on it. A rule the server's
				// profile cannot feed is not replayed on the server alone; on the fleet the rule is
				// rendered for the servers that can feed it, and an engine rule then answers every
				// model the engine can read (Triton's latency against its baseline, from its
				// duration counters), as the provisioned Grafana rule would.
				if isGPURule(want.ID) || want.Unavailable != "" {
					continue
				}
				got := byID[want.ID]
				var mine []backtest.EpisodeReport
				for _, ep := range got.Episodes {
					if ep.Labels[engine.ServerLabel] == server {
						l := maps.Clone(ep.Labels)
						delete(l, engine.ServerLabel)
						ep.Labels = l
						mine = append(mine, ep)
					}
				}
				if want.Error != "" || got.Error != "" {
					t.Errorf("%s: errors %q on the server alone, %q on the fleet", want.ID, want.Error, got.Error)
				}
				if !reflect.DeepEqual(mine, nonNil(want.Episodes)) {
					t.Errorf("%s: the fleet fires on %s\n%+v\nthe server alone\n%+v", want.ID, server, mine, want.Episodes)
				}
				episodes += len(want.Episodes)
				perRule[want.ID] += len(want.Episodes)
				for _, ep := range want.Episodes {
					if want.ID == "queue-p1" && ep.Labels["instance"] == expo.FleetInstance(server, "node-a:8000") &&
						strings.Contains(labelsText(ep.Labels), expo.FleetModel(server, surge.Model)) && ep.Start.Before(surge.End) {
						surged = true
					}
				}
			}
			if episodes == 0 || !surged {
				t.Errorf("episodes on %s alone %v, the queue surge among them: %v", server, perRule, surged)
			}
		})
	}
}

func isGPURule(id string) bool {
	rules, _ := alerting.Catalog(alerting.Defaults())
	for _, r := range rules {
		if r.ID == id {
			return r.Scope == alerting.ScopeGPU
		}
	}
	return false
}

func nonNil(eps []backtest.EpisodeReport) []backtest.EpisodeReport {
	if len(eps) == 0 {
		return nil
	}
	return eps
}

// TestRulesExportFollowsTheFleet: `rules export --prometheus` renders for every server the engine
// finds (one Prometheus group per server, the same file as naming the six profiles), and
// --profile still forces one.
func TestRulesExportFollowsTheFleet(t *testing.T) {
	fleet, _ := serveNaming(t, expo.FleetName)
	code, out, errOut := runCLI(t, "rules", "export", "--format", "prometheus", "--prometheus", fleet)
	p := alerting.Defaults()
	p.Profile = "custom,vllm,triton,torchserve,tgi,sglang"
	want, err := alerting.RenderPrometheus(p)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || out != string(want) {
		t.Errorf("exit %d %s: the export differs from the six profiles' rendering:\n%.400s", code, errOut, out)
	}
	code, out, _ = runCLI(t, "rules", "export", "--format", "prometheus", "--prometheus", fleet, "--profile", "triton")
	p.Profile = "triton"
	want, _ = alerting.RenderPrometheus(p)
	if code != 0 || out != string(want) {
		t.Errorf("--profile triton: exit %d, not the Triton rendering:\n%.400s", code, out)
	}
	if code, _, errOut := runCLI(t, "rules", "export", "--format", "prometheus", "--profile-label", "tgi.model=m"); code != exitUsage || !strings.Contains(errOut, "--profile-label needs --prometheus") {
		t.Errorf("--profile-label without --prometheus: exit %d %s", code, errOut)
	}
}
