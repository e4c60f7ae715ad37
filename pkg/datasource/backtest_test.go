package datasource

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/inferscope/inferscope/pkg/backtest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

func postBacktest(t *testing.T, d *Datasource, body string) (int, backtest.Report, string) {
	t.Helper()
	ans := resourceAnswer(t, d, &backend.CallResourceRequest{Method: http.MethodPost, Path: "backtest", Body: []byte(body),
		PluginContext: backend.PluginContext{OrgID: 1, DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "inferscope-test"}}})
	var r backtest.Report
	if ans.Status == http.StatusOK {
		if err := json.Unmarshal(ans.Body, &r); err != nil {
			t.Fatalf("answer: %v: %s", err, ans.Body)
		}
	}
	return ans.Status, r, string(ans.Body)
}

func firedOn(r backtest.Report, rule string) []map[string]string {
	var out []map[string]string
	for _, rr := range r.Rules {
		if rr.ID == rule {
			for _, ep := range rr.Episodes {
				out = append(out, ep.Labels)
			}
		}
	}
	return out
}

const backtestWeek = `{"from":"2026-11-16T12:00:00Z","to":"2026-11-23T12:00:00Z"}`

// TestBacktestResource replays the catalog over the test bed's week through the resource: the
// compute slowdown and the queue surge fire the P0 latency rule on recsys v1.4.0 (node-b, node-a), node-c's restart is the one warm-up
// and the canary the one deploy; the answer is recorded for the Alert rules page's tests. Bad
// requests answer 400, an unreachable Prometheus 502.
func TestBacktestResource(t *testing.T) {
	dir, _ := tbtest.TSDB(t)
	// A week of baseline at 1 m is the heaviest query the suite runs: on a loaded machine it
	// outlasts the default 30 s client and 2 m Prometheus timeouts, and a timed-out rule reports no
	// episode (with a notice). The test compares results, not speed.
	srv := promtest.Start(t, promtest.Options{DataDir: dir, ExtraArgs: []string{"--query.timeout=10m"}})
	d := newTestDS(t, instanceSettings(t, srv.URL, map[string]any{"timeout": 600}, nil))

	status, r, body := postBacktest(t, d, backtestWeek)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	// Per instance: node-b's compute slowdown, then node-a's queue surge, both recsys v1.4.0.
	p0 := firedOn(r, "latency-p0")
	if len(p0) != 2 {
		t.Fatalf("latency-p0 fired on %v, want node-b then node-a; notices %v", p0, r.Notices)
	}
	for i, inst := range []string{"node-b:8000", "node-a:8000"} {
		if p0[i]["model_name"] != "recsys-ranker" || p0[i]["model_version"] != "v1.4.0" || p0[i]["instance"] != inst {
			t.Errorf("latency-p0 episode %d on %v, want recsys-ranker v1.4.0 on %s", i, p0[i], inst)
		}
	}
	if len(r.Rules) != 15 || len(r.Warmups) != 1 || r.Warmups[0].Instance != "node-c:8000" || len(r.Deploys) != 1 || r.Deploys[0].Version != "v1.5.0" {
		t.Errorf("%d rules, warm-ups %+v, deploys %+v", len(r.Rules), r.Warmups, r.Deploys)
	}
	if r.Interval != "1m" || !r.From.Equal(testbed.DefaultEnd.Add(-7*24*time.Hour)) || !r.To.Equal(testbed.DefaultEnd) || r.Queries <= 0 {
		t.Errorf("interval %s, %s..%s, %d queries", r.Interval, r.From, r.To, r.Queries)
	}

	// Recorded for the page's tests, with the measurements (wall time, round trips) zeroed and
	// the peaks to 10 significant digits so the file is stable: the network rule's peak, a mean
	// over days that Prometheus sums in no fixed order, differs in its last bits from run to run.
	r.Seconds, r.Queries = 0, 0
	for i := range r.Rules {
		for j := range r.Rules[i].Episodes {
			ep := &r.Rules[i].Episodes[j]
			ep.Peak, _ = strconv.ParseFloat(strconv.FormatFloat(ep.Peak, 'g', 10, 64), 64)
		}
	}
	checkRecorded(t, filepath.Join("..", "..", "src", "pages", "AlertRules", "testdata", "backtest.json"), r)

	// Parameters are the rules resource's: a lower queue line fires the queue rule in the surge.
	status, r, body = postBacktest(t, d, `{"from":"2026-11-23T00:00:00Z","to":"1795435200","rules":["queue-p1"],"params":{"queueShare":"50%","profile":"vllm"}}`)
	if status != http.StatusOK || len(r.Rules) != 1 || len(firedOn(r, "queue-p1")) == 0 {
		t.Errorf("queueShare 50%%: %d %s", status, body)
	}

	for _, bad := range []string{
		`{"from":"yesterday"}`,
		`{"rules":["nope"]}`,
		`{"params":{"latencyWarnRatio":7}}`,
		`{"from":"2026-11-23T12:00:00Z","to":"2026-11-16T12:00:00Z"}`,
		`[1,2]`,
	} {
		if status, _, body := postBacktest(t, d, bad); status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", bad, status, body)
		}
	}
	down := newTestDS(t, instanceSettings(t, promtest.ClosedURL(t), map[string]any{"profile": "custom"}, nil))
	if status, _, body := postBacktest(t, down, backtestWeek); status != http.StatusBadGateway {
		t.Errorf("Prometheus down: %d %s, want 502", status, body)
	}
}

// TestBacktestOverGRPC calls the resource through the built plugin as Grafana does.
func TestBacktestOverGRPC(t *testing.T) {
	p, pc, _ := startPluginOnBed(t, nil)
	body := `{"from":"2026-11-22T12:00:00Z","to":"2026-11-23T12:00:00Z","rules":["gpu-idle-p0","latency-p0"]}`
	status, got := resourceOverGRPC(t, p, &pluginv2.CallResourceRequest{PluginContext: pc, Method: http.MethodPost, Path: "backtest", Body: []byte(body)})
	var r backtest.Report
	if err := json.Unmarshal(got, &r); err != nil || status != http.StatusOK {
		t.Fatalf("%d %s (%v)", status, got, err)
	}
	idle := firedOn(r, "gpu-idle-p0")
	if len(r.Rules) != 2 || len(idle) != 1 || idle[0]["node"] != "node-a" || idle[0]["gpu"] != "6" || len(firedOn(r, "latency-p0")) != 2 {
		t.Errorf("gpu-idle-p0 fired on %v; report %s", idle, got)
	}
}
