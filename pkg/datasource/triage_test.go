package datasource

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
	"github.com/inferscope/inferscope/pkg/triage"
)

// surgeTriageQuery is the resource URL for the test bed's queue surge (node-a recsys v1.4.0,
// from end−8h for 30 min), triaged from 10 to 15 minutes into it.
func surgeTriageQuery(extra url.Values) string {
	start := testbed.DefaultEnd.Add(-8 * time.Hour)
	v := url.Values{"model": {"recsys-ranker"}, "version": {"v1.4.0"},
		"from": {start.Add(10 * time.Minute).Format(time.RFC3339)}, "to": {start.Add(15 * time.Minute).Format(time.RFC3339)}}
	for k, vals := range extra {
		v[k] = vals
	}
	return "triage?" + v.Encode()
}

// idleNodeTriageQuery is a GPU alert's question for the test bed's GPU idle incident (node-a
// GPU 6 from end−11h for 15 min, the text-embedder's), 10 to 15 minutes into it: no model.
func idleNodeTriageQuery() string {
	start := testbed.DefaultEnd.Add(-11 * time.Hour)
	v := url.Values{"node": {"node-a"}, "gpu": {"6"},
		"from": {start.Add(10 * time.Minute).Format(time.RFC3339)}, "to": {start.Add(15 * time.Minute).Format(time.RFC3339)}}
	return "triage?" + v.Encode()
}

func callTriage(t *testing.T, d *Datasource, query string) (int, triage.Report, string) {
	t.Helper()
	return getReport[triage.Report](t, d, "triage", query)
}

// surgeCauses are the test bed's queue surge's own causes: traffic ×1.5 on a batching that lets
// the queue grow, both in its truth; either ranks first.
var surgeCauses = []string{triage.CauseQueue, triage.CauseTrafficSurge}

// TestTriageResource: the queue surge is diagnosed on node-a (queue-led); bad options
// answer 400, an unreachable Prometheus 502, refused credentials 401.
func TestTriageResource(t *testing.T) {
	dir, _ := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	d := newTestDS(t, instanceSettings(t, srv.URL, nil, nil))

	status, r, body := callTriage(t, d, surgeTriageQuery(nil))
	if status != http.StatusOK || r.Verdict != triage.Diagnosed || len(r.Causes) == 0 || !slices.Contains(surgeCauses, r.Causes[0].ID) || r.Causes[0].Instance != "node-a:8000" {
		t.Fatalf("queue surge: %d %s", status, body)
	}
	if r.Window.Duration != "5m" || r.Before.Duration != "1h" || len(r.Steps) != 5 {
		t.Fatalf("window %+v before %+v steps %d", r.Window, r.Before, len(r.Steps))
	}
	status, r, body = callTriage(t, d, idleNodeTriageQuery())
	if status != http.StatusOK || r.Verdict != triage.Diagnosed || r.Node != "node-a" || r.GPU != "6" || len(r.Causes) == 0 ||
		r.Causes[0].ID != triage.CauseGPUIdle || r.Causes[0].Model != "text-embedder" || r.Causes[0].Instance != "node-a:8000" {
		t.Fatalf("GPU idle by node: %d %s", status, body)
	}
	if status, _, body := callTriage(t, d, "triage?version=v1"); status != http.StatusBadRequest || !strings.Contains(body, "model or node is required") {
		t.Errorf("no model, no node: %d %s", status, body)
	}
	for _, bad := range []string{
		"triage?version=v1",
		"triage?model=recsys-ranker&gpu=6", // a GPU needs its node
		surgeTriageQuery(url.Values{"from": {"yesterday"}}),
		surgeTriageQuery(url.Values{"to": {testbed.DefaultEnd.Add(-9 * time.Hour).Format(time.RFC3339)}}), // to before from
		surgeTriageQuery(url.Values{"before": {"a while"}}),
		"triage?model=%zz",
	} {
		if status, _, body := callTriage(t, d, bad); status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", bad, status, body)
		}
	}

	down := newTestDS(t, instanceSettings(t, promtest.ClosedURL(t), map[string]any{"profile": "custom"}, nil))
	if status, _, body := callTriage(t, down, surgeTriageQuery(nil)); status != http.StatusBadGateway {
		t.Errorf("Prometheus down: %d %s", status, body)
	}

	const user, password = "grafana", "correct horse battery staple"
	locked := promtest.Start(t, promtest.Options{WebConfigYAML: webConfig(t, user, password, nil), ReadyUser: user, ReadyPassword: password})
	wrong := newTestDS(t, instanceSettings(t, locked.URL, map[string]any{"basicAuth": true, "basicAuthUser": user, "profile": "custom"},
		map[string]string{"basicAuthPassword": "hunter2"}))
	if status, _, body := callTriage(t, wrong, surgeTriageQuery(nil)); status != http.StatusUnauthorized {
		t.Errorf("wrong password: %d %s", status, body)
	}
}

// TestTriageResourceRecordedAnswerIsCurrent keeps the Triage page's recorded answers (the queue
// surge by model, the GPU idle incident by node and GPU) equal to what the data source answers.
func TestTriageResourceRecordedAnswerIsCurrent(t *testing.T) {
	dir, _ := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	d := newTestDS(t, instanceSettings(t, srv.URL, nil, nil))
	for file, query := range map[string]string{"triage.json": surgeTriageQuery(nil), "triage-node.json": idleNodeTriageQuery()} {
		t.Run(file, func(t *testing.T) { checkTriageFixture(t, d, file, query) })
	}
}

func checkTriageFixture(t *testing.T, d *Datasource, file, query string) {
	status, _, body := callTriage(t, d, query)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	// Recorded with its keys sorted (as a generic JSON value).
	var ans any
	if err := json.Unmarshal([]byte(body), &ans); err != nil {
		t.Fatal(err)
	}
	checkRecorded(t, filepath.Join("..", "..", "src", "pages", "Triage", "testdata", file), ans)
}

// TestTriageOverGRPC calls the resource through the built plugin as Grafana does.
func TestTriageOverGRPC(t *testing.T) {
	p, pc, _ := startPluginOnBed(t, nil)
	for _, c := range []struct {
		query  string
		status int
		first  []string
	}{
		{surgeTriageQuery(nil), http.StatusOK, surgeCauses},
		{idleNodeTriageQuery(), http.StatusOK, []string{triage.CauseGPUIdle}},
		{"triage?from=soon", http.StatusBadRequest, nil},
	} {
		status, body := resourceOverGRPC(t, p, &pluginv2.CallResourceRequest{PluginContext: pc, Method: http.MethodGet, Path: "triage", Url: c.query})
		var r triage.Report
		if err := json.Unmarshal(body, &r); err != nil || status != c.status {
			t.Errorf("%s: %d %s (%v)", c.query, status, body, err)
			continue
		}
		if c.first != nil && (len(r.Causes) == 0 || !slices.Contains(c.first, r.Causes[0].ID) || r.Verdict != triage.Diagnosed) {
			t.Errorf("%s: %s", c.query, body)
		}
	}
}
