package datasource

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/inferscope/inferscope/pkg/plugintest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// fleetSettings is how a user of the test bed's fleet configures the data source: auto, with
// the TGI routers' relabelled model label.
var fleetSettings = map[string]any{"profileLabels": map[string]any{"tgi": map[string]any{"modelLabel": expo.TGIModelLabel}}}

func fleetContext(t *testing.T, naming string, jsonData map[string]any) (*pluginv2.PluginContext, *testbed.Scenario) {
	t.Helper()
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: naming})
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	settings := instanceSettings(t, srv.URL, jsonData, nil)
	settings.UID = "fleet-" + naming
	return plugintest.PluginContext(PluginID, settings), s
}

// TestFleetOverGRPC: the plugin, on one Prometheus holding the six servers, names every server
// in its health check, lists every model with its server, and answers a model of each server
// exactly as a data source on that server alone does (frames compared as JSON); a query over
// models of two servers labels each series with its server.
func TestFleetOverGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the plugin executable and several Prometheus servers")
	}
	p := plugintest.Start(t, plugintest.Binary(t, protocolVersion))
	fleet, s := fleetContext(t, expo.FleetName, fleetSettings)
	ctx := context.Background()

	h, err := p.CheckHealth(ctx, fleet)
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != backend.HealthStatusOk || !strings.Contains(h.Message, "a profile per model: servers found: custom (2 models), vllm (2 models), triton (2 models), torchserve (2 models), tgi (2 models), sglang (2 models)") {
		t.Errorf("health %v %q", h.Status, h.Message)
	}
	// Forcing a profile the fleet lacks... every profile is there; the absent-profile warning is
	// TestHealthPlainPrometheus's.

	status, body := resourceOverGRPC(t, p, &pluginv2.CallResourceRequest{PluginContext: fleet, Method: "GET", Path: "variables", Url: "variables?kind=model"})
	var vars variablesAnswer
	if err := json.Unmarshal(body, &vars); status != 200 || err != nil {
		t.Fatalf("variables %d %s", status, body)
	}
	if n := 2 * len(expo.FleetServers); len(vars.Values) != n || len(vars.Options) != n {
		t.Errorf("model variable: %+v", vars)
	}
	for _, o := range vars.Options {
		if o.Value == "vllm-recsys-ranker" && o.Text != "vllm-recsys-ranker (vllm)" {
			t.Errorf("option %+v", o)
		}
	}

	surge, _ := s.Incident(testbed.QueueSurge)
	from, to := surge.Start.Add(-20*time.Minute), surge.End.Add(10*time.Minute)
	for _, server := range []string{"vllm", "triton", "sglang"} {
		alone, _ := fleetContext(t, expo.FleetPart(server), fleetSettings)
		m := expo.FleetModel(server, "recsys-ranker")
		var queries []backend.DataQuery
		for _, typ := range []string{"latency", "split", "baseline", "errors"} {
			dq := dataQuery(typ, from, to, time.Minute, map[string]any{"model": m})
			dq.QueryType = typ
			queries = append(queries, dq)
		}
		got, err := p.QueryData(ctx, fleet, queries...)
		if err != nil {
			t.Fatal(err)
		}
		want, err := p.QueryData(ctx, alone, queries...)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			g, w := framesJSON(t, got.Responses[q.RefID]), framesJSON(t, want.Responses[q.RefID])
			if g != w || len(g) < 100 {
				t.Errorf("%s %s: the fleet answers\n%.600s\nthe server alone\n%.600s", server, q.RefID, g, w)
			}
		}
	}

	dq := dataQuery("A", from, to, time.Minute, map[string]any{"model": []string{"vllm-recsys-ranker", "triton-recsys-ranker"}})
	dq.QueryType = "throughput"
	resp, err := p.QueryData(ctx, fleet, dq)
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]bool{}
	for _, f := range resp.Responses["A"].Frames {
		for _, fl := range f.Fields {
			if srv := fl.Labels["server"]; srv != "" {
				servers[srv] = true
			}
		}
	}
	if fmt.Sprint(servers) != "map[triton:true vllm:true]" {
		t.Errorf("servers on the series: %v", servers)
	}
}

func framesJSON(t *testing.T, r backend.DataResponse) string {
	t.Helper()
	if r.Error != nil {
		return "error: " + r.Error.Error()
	}
	var parts []string
	for _, f := range r.Frames {
		if f.Meta != nil {
			// The engine sends some queries concurrently: their order is not part of the answer.
			lines := strings.Split(f.Meta.ExecutedQueryString, "\n")
			slices.Sort(lines)
			f.Meta.ExecutedQueryString = strings.Join(lines, "\n")
		}
		b, err := data.FrameToJSON(f, data.IncludeAll)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n")
}
