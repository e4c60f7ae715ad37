package datasource

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/inferscope/inferscope/pkg/gate"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// gateQuery is the resource URL for the test bed's canaries, ending at the history's end.
func gateQuery(model, baseline, canary string, extra url.Values) string {
	v := url.Values{"model": {model}, "baseline": {baseline}, "canary": {canary}, "at": {testbed.DefaultEnd.Format("2006-01-02T15:04:05Z")}}
	for k, vals := range extra {
		v[k] = vals
	}
	return "gate?" + v.Encode()
}

func callGate(t *testing.T, d *Datasource, query string) (int, gate.Report, string) {
	t.Helper()
	return getReport[gate.Report](t, d, "gate", query)
}

func latencyChange(t *testing.T, r gate.Report, name string) float64 {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name && c.Change != nil {
			return *c.Change
		}
	}
	t.Fatalf("no %s change in %+v", name, r.Checks)
	return 0
}

// TestGateResource: the 15 %-slower recsys canary answers 412 with the mean latency 15 % up, the
// 2 %-faster embedder canary 200, a window before the recsys canary existed 409; statusCodes=false
// answers 200 with the same verdict; bad parameters 400.
func TestGateResource(t *testing.T) {
	dir, _ := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	d := newTestDS(t, instanceSettings(t, srv.URL, nil, nil))

	status, r, body := callGate(t, d, gateQuery("recsys-ranker", "v1.4.0", "v1.5.0", nil))
	if status != http.StatusPreconditionFailed || r.Verdict != gate.Fail || math.Abs(latencyChange(t, r, gate.CheckMeanLatency)-0.15) > 0.001 {
		t.Fatalf("slow canary: %d %s", status, body)
	}
	status, r, body = callGate(t, d, gateQuery("recsys-ranker", "v1.4.0", "v1.5.0", url.Values{"statusCodes": {"false"}}))
	if status != http.StatusOK || r.Verdict != gate.Fail {
		t.Fatalf("slow canary, statusCodes=false: %d %s", status, body)
	}
	status, r, body = callGate(t, d, gateQuery("text-embedder", "v2.1.0", "v2.2.0", nil))
	if status != http.StatusOK || r.Verdict != gate.Pass || math.Abs(latencyChange(t, r, gate.CheckMeanLatency)+0.02) > 0.001 {
		t.Fatalf("good canary: %d %s", status, body)
	}
	// The slow canary passes when the limit is raised above its 29.7 % P95 change (interpolated
	// in the 25-50 ms bucket) and its 15 % mean change.
	status, r, body = callGate(t, d, gateQuery("recsys-ranker", "v1.4.0", "v1.5.0", url.Values{"latencyThreshold": {"35%"}}))
	if status != http.StatusOK || r.Verdict != gate.Pass {
		t.Fatalf("slow canary, 35 %% limit: %d %s", status, body)
	}
	status, r, body = callGate(t, d, gateQuery("recsys-ranker", "v1.4.0", "v1.5.0", url.Values{"at": {testbed.DefaultEnd.Add(-4 * time.Hour).Format("2006-01-02T15:04:05Z")}}))
	if status != http.StatusConflict || r.Verdict != gate.InsufficientData {
		t.Fatalf("before the canary: %d %s", status, body)
	}
	for _, bad := range []string{
		"gate?model=recsys-ranker&baseline=v1.4.0",
		gateQuery("recsys-ranker", "v1.4.0", "v1.5.0", url.Values{"window": {"forever"}}),
		gateQuery("recsys-ranker", "v1.4.0", "v1.5.0", url.Values{"latencyThreshold": {"-5%"}}),
		gateQuery("recsys-ranker", "v1.4.0", "v1.5.0", url.Values{"statusCodes": {"maybe"}}),
	} {
		if status, _, body := callGate(t, d, bad); status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", bad, status, body)
		}
	}
}

// TestGateOverGRPC calls the resource through the built plugin as Grafana does (path and URL
// with the query string).
func TestGateOverGRPC(t *testing.T) {
	p, pc, _ := startPluginOnBed(t, nil)
	for _, c := range []struct {
		query  string
		status int
		want   gate.Verdict
	}{
		{gateQuery("recsys-ranker", "v1.4.0", "v1.5.0", nil), http.StatusPreconditionFailed, gate.Fail},
		{gateQuery("text-embedder", "v2.1.0", "v2.2.0", nil), http.StatusOK, gate.Pass},
	} {
		status, body := resourceOverGRPC(t, p, &pluginv2.CallResourceRequest{PluginContext: pc, Method: http.MethodGet, Path: "gate", Url: c.query})
		var r gate.Report
		if err := json.Unmarshal(body, &r); err != nil || status != c.status || r.Verdict != c.want {
			t.Errorf("%s: %d %s (%v)", c.query, status, body, err)
		}
	}
}
