package datasource

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// TestRulesAndBacktestOnFleet: on the mixed fleet the rules resource renders for every server
// the data source found, each with its own label names (the TGI routers' relabelled model label
// from the settings), exactly as the catalog renders those six servers; the backtest resource
// replays them, a Triton model's queue surge labelled with its server.
func TestRulesAndBacktestOnFleet(t *testing.T) {
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: expo.FleetName})
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	d := newTestDS(t, instanceSettings(t, srv.URL, fleetSettings, nil))
	status, ans, body := postRules(t, d, `{"action":"render"}`)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	if ans.Profile.Name != "custom,vllm,triton,torchserve,tgi,sglang" || !ans.Profile.Detected || len(ans.Profile.Servers) != 6 {
		t.Errorf("profile %+v", ans.Profile)
	}
	var servers []profile.Profile
	for _, n := range ans.Profile.Servers {
		p, _ := profile.ByName(n)
		if n == "tgi" {
			p, _ = p.WithLabels(expo.TGIModelLabel, "", "")
		}
		servers = append(servers, p)
	}
	p := alerting.Defaults()
	p.SetServers(servers)
	p.DatasourceUID = "inferscope-test"
	want, err := alerting.RenderPrometheus(p)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Files["prometheus"] != string(want) {
		t.Errorf("the Prometheus file is not the six servers' rendering:\n%.600s", ans.Files["prometheus"])
	}
	if !strings.Contains(ans.Files["prometheus"], "- name: inferscope-tgi") || !strings.Contains(ans.Files["prometheus"], "sum by ("+expo.TGIModelLabel+", instance) (rate(tgi_request_count") {
		t.Error("the TGI group does not read the renamed model label")
	}
	if uid := ans.RuleUIDs["cache-drop-p2/triton"]; uid == "" || uid != alerting.ServerRuleUID(p, "cache-drop-p2", "triton") {
		t.Errorf("rule uids %v", ans.RuleUIDs)
	}
	perServer := 0
	for _, r := range ans.RuleGroup.Rules {
		if r.Labels[alerting.RuleLabel] == "cache-drop-p2" {
			perServer++
		}
	}
	if perServer != 4 { // custom, vllm, triton, sglang
		t.Errorf("cache-drop-p2 rendered %d times, want once per server with cache metrics (4)", perServer)
	}

	surge, _ := s.Incident(testbed.QueueSurge)
	status, rep, body := postBacktest(t, d, `{"rules":["queue-p1"],"from":"`+surge.Start.Add(-30*time.Minute).Format(time.RFC3339)+`","to":"`+surge.End.Format(time.RFC3339)+`"}`)
	if status != http.StatusOK {
		t.Fatalf("backtest %d %s", status, body)
	}
	model := expo.FleetModel("triton", surge.Model)
	if !slices.ContainsFunc(firedOn(rep, "queue-p1"), func(l map[string]string) bool {
		return l[engine.ServerLabel] == "triton" && l["model"] == model && l["instance"] == expo.FleetInstance("triton", "node-a:8000")
	}) {
		t.Errorf("queue-p1 fired on %v, not on %s", firedOn(rep, "queue-p1"), model)
	}
}
