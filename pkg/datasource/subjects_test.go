package datasource

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// TestUnknownSubjectsAreNotFound: a version, instance, node or GPU Prometheus has no series of
// answers 404 from the triage and gate resources and an error (status 404) on the query's frame,
// listing the names it has — never an empty "ok". "a|b" means the set {a, b} in every reading:
// the query types read both models, triage and gate (which take one) refuse it with 400.
func TestUnknownSubjectsAreNotFound(t *testing.T) {
	dir, _ := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	d := newTestDS(t, instanceSettings(t, srv.URL, nil, nil))

	for _, c := range []struct {
		path, query string
		status      int
		want        string
	}{
		{"triage", surgeTriageQuery(url.Values{"version": {"v9"}}), 404,
			`unknown version \"v9\" of recsys-ranker: Prometheus has series of v1.4.0, v1.5.0`},
		{"triage", surgeTriageQuery(url.Values{"instance": {"node-z:8000"}}), 404, `unknown instance \"node-z:8000\" of recsys-ranker`},
		{"triage", strings.Replace(idleNodeTriageQuery(), "node=node-a", "node=node-z", 1), 404, `unknown node \"node-z\"`},
		{"triage", strings.Replace(idleNodeTriageQuery(), "gpu=6", "gpu=12", 1), 404,
			`unknown GPU \"12\" on node node-a: Prometheus has series of 0, 1, 2, 3, 4, 5, 6, 7`},
		{"triage", surgeTriageQuery(url.Values{"model": {"recsys-ranker|text-embedder"}, "version": nil}), 400,
			`model \"recsys-ranker|text-embedder\" names 2 values (recsys-ranker, text-embedder): it takes one`},
		// Read as a literal version before, this answered 200 "healthy": no series carries "v1.4.0|v1.5.0".
		{"triage", surgeTriageQuery(url.Values{"version": {"v1.4.0|v1.5.0"}}), 400,
			`version \"v1.4.0|v1.5.0\" names 2 values (v1.4.0, v1.5.0): it takes one`},
		{"gate", "gate?model=recsys-ranker&baseline=v1.4.0&canary=v2", 404, `unknown version \"v2\" of recsys-ranker`},
		{"gate", "gate?model=recsys-ranker&baseline=v1.4.0|v1.5.0&canary=v1.5.0", 400, `baseline \"v1.4.0|v1.5.0\" names 2 values`},
	} {
		status, _, body := getReport[map[string]any](t, d, c.path, c.query)
		if status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s; want %d %s", c.query, status, body, c.status, c.want)
		}
	}

	to := testbed.DefaultEnd.Add(-8 * time.Hour)
	from := to.Add(-30 * time.Minute)
	req := &backend.QueryDataRequest{Queries: []backend.DataQuery{
		dataQuery("V", from, to, time.Minute, map[string]any{"queryType": "latency", "model": "recsys-ranker", "version": "v9"}),
		dataQuery("I", from, to, time.Minute, map[string]any{"queryType": "throughput", "instance": "node-z:8000"}),
		dataQuery("G", from, to, time.Minute, map[string]any{"queryType": "gpu", "instance": "node-a", "gpu": "12"}),
		dataQuery("L", from, to, time.Minute, map[string]any{"queryType": "throughput", "model": []string{"recsys-ranker|text-embedder"}}),
		// A set: both models, each matched exactly; a node name is an instance of the GPU types.
		dataQuery("S", from, to, time.Minute, map[string]any{"queryType": "throughput", "model": "recsys-ranker|text-embedder", "by": "model"}),
		dataQuery("N", from, to, time.Minute, map[string]any{"queryType": "gpu", "instance": "node-a", "gpu": "6|7"}),
	}}
	resp, err := d.QueryData(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]string{
		"V": `unknown version "v9" of recsys-ranker: Prometheus has series of v1.4.0, v1.5.0`,
		"I": `unknown instance "node-z:8000": Prometheus has series of node-a:8000`,
		"G": `unknown GPU "12" on node node-a`,
		"L": `unknown model "recsys-ranker|text-embedder": Prometheus has series of recsys-ranker, text-embedder`,
	} {
		r := resp.Responses[ref]
		if r.Error == nil || r.Status != http.StatusNotFound || !strings.Contains(r.Error.Error(), want) {
			t.Errorf("%s: status %d, %v; want 404 %s", ref, r.Status, r.Error, want)
		}
	}
	s := resp.Responses["S"]
	models := map[string]bool{}
	for _, f := range s.Frames {
		for _, fd := range f.Fields {
			if m := fd.Labels["model_name"]; m != "" {
				models[m] = true
			}
		}
	}
	if s.Error != nil || len(models) != 2 || !models["recsys-ranker"] || !models["text-embedder"] {
		t.Errorf("a|b: %v, models %v", s.Error, models)
	}
	if n := resp.Responses["N"]; n.Error != nil || len(n.Frames) == 0 {
		t.Errorf("node-a GPUs 6|7: %v, %d frames", n.Error, len(n.Frames))
	}
}
