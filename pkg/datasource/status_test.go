package datasource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

func TestStatusOf(t *testing.T) {
	errBadOption := errors.New("bad option")
	for _, tc := range []struct {
		name string
		err  error
		want int
		src  backend.ErrorSource
	}{
		{"a field", &engine.FieldError{Field: "quantile", Msg: "must be a number"}, 400, backend.ErrorSourceDownstream},
		{"a limit", &engine.LimitError{Msg: "too many series"}, 400, backend.ErrorSourceDownstream},
		{"a configuration", &engine.ConfigError{Msg: "unknown profile"}, 400, backend.ErrorSourceDownstream},
		{"a profile", &profileError{"none"}, 400, backend.ErrorSourceDownstream},
		{"a resource option", fmt.Errorf("window: %w", errBadOption), 400, backend.ErrorSourceDownstream},
		{"PromQL that does not parse", &prom.Error{Kind: prom.KindBadQuery}, 400, backend.ErrorSourceDownstream},
		{"an answer over the size limit", &prom.Error{Kind: prom.KindLimit}, 400, backend.ErrorSourceDownstream},
		{"401", &prom.Error{Kind: prom.KindAuth, Status: 401}, 401, backend.ErrorSourceDownstream},
		{"403", &prom.Error{Kind: prom.KindAuth, Status: 403}, 403, backend.ErrorSourceDownstream},
		{"upstream 500", &prom.Error{Kind: prom.KindHTTP, Status: 500}, 502, backend.ErrorSourceDownstream},
		{"upstream could not evaluate", &prom.Error{Kind: prom.KindExecution, Status: 422}, 502, backend.ErrorSourceDownstream},
		{"unreachable", &prom.Error{Kind: prom.KindUnreachable}, 502, backend.ErrorSourceDownstream},
		{"TLS", &prom.Error{Kind: prom.KindTLS}, 502, backend.ErrorSourceDownstream},
		{"not Prometheus", &prom.Error{Kind: prom.KindNotPrometheus, Status: 200}, 502, backend.ErrorSourceDownstream},
		{"timeout", &prom.Error{Kind: prom.KindTimeout}, 504, backend.ErrorSourceDownstream},
		{"cancelled in Prometheus", &prom.Error{Kind: prom.KindCanceled}, 504, backend.ErrorSourceDownstream},
		{"cancelled in the engine", fmt.Errorf("reading: %w", context.Canceled), 504, backend.ErrorSourceDownstream},
		{"the plugin's own", errors.New("frame conversion failed"), 500, backend.ErrorSourcePlugin},
		{"an unknown model", fmt.Errorf("triage: %w", &engine.UnknownError{What: "model", Name: "recsys-rankr", Known: []string{"recsys-ranker"}}), 404, backend.ErrorSourceDownstream},
	} {
		status, src := statusOf(tc.err, errBadOption)
		if status != tc.want || src != tc.src {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, src, tc.want, tc.src)
		}
		if r := errorResponse(tc.err); int(r.Status) != tc.want && tc.name != "a resource option" {
			t.Errorf("%s: query answer %d, want %d", tc.name, r.Status, tc.want)
		}
		if status, _ := failure(tc.err, errBadOption); status != tc.want {
			t.Errorf("%s: resource answer %d, want %d", tc.name, status, tc.want)
		}
	}
	if http.StatusBadGateway != int(backend.StatusBadGateway) || http.StatusGatewayTimeout != int(backend.StatusTimeout) {
		t.Fatal("the SDK's statuses are no longer HTTP codes")
	}
}

// A misspelt field or parameter is refused with the known ones listed, never ignored with its
// default silently used.
func TestResourcesRefuseUnknownFields(t *testing.T) {
	d := newTestDS(t, instanceSettings(t, "http://127.0.0.1:1", map[string]any{}, nil))
	for _, tc := range []struct {
		method, path, url, body string
		want                    string
	}{
		{http.MethodPost, "backtest", "backtest", `{"last":"400d"}`, `the backtest request has an unknown field "last": it takes params, from, to, rules`},
		{http.MethodPost, "backtest", "backtest", `{"from":"0"} {"to":"1"}`, "more than one JSON value"},
		{http.MethodPost, "rules", "rules", `{"action":"render","parms":{}}`, `the rules request has an unknown field "parms": it takes action, params, existing`},
		{http.MethodGet, "triage", "triage?model=m&windw=15m", "", `the triage request has unknown parameters "windw": it takes model, version, instance, node, gpu, from, to, before`},
		{http.MethodGet, "gate", "gate?model=m&baseline=a&canary=b&windows=2h", "", `the gate request has unknown parameters "windows": it takes statusCodes, model, baseline`},
	} {
		ans := resourceAnswer(t, d, &backend.CallResourceRequest{Method: tc.method, Path: tc.path, URL: tc.url, Body: []byte(tc.body)})
		var e errorBody
		_ = json.Unmarshal(ans.Body, &e)
		if ans.Status != http.StatusBadRequest || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s %s %s: %d %s, want 400 with %q", tc.method, tc.url, tc.body, ans.Status, ans.Body, tc.want)
		}
	}
}

// maxAnswerSize bounds what one Prometheus answer may cost: past it the query fails alone with a
// message naming the limit and how to narrow the query; an unreadable size is a settings problem.
func TestMaxAnswerSizeSetting(t *testing.T) {
	srv := startPromWithCounters(t, promtest.Options{})
	from, to := dataStart.Add(5*time.Minute), dataStart.Add(55*time.Minute)
	q := dataQuery("A", from, to, 15*time.Second, map[string]any{"refId": "A", "queryType": "promql", "expr": "inference_requests_total"})
	for _, tc := range []struct {
		size   string
		status int
		want   string
	}{{"", 200, ""}, {"1KiB", 400, "is larger than the limit of 1 KiB: narrow the query"}} {
		d := newTestDS(t, instanceSettings(t, srv.URL, map[string]any{"maxAnswerSize": tc.size}, nil))
		resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
		if err != nil {
			t.Fatal(err)
		}
		r := resp.Responses["A"]
		got := 200
		if r.Error != nil {
			got = int(r.Status)
		}
		if got != tc.status || (tc.want != "" && (r.Error == nil || !strings.Contains(r.Error.Error(), tc.want))) {
			t.Errorf("maxAnswerSize %q: status %d, error %v; want %d %q", tc.size, got, r.Error, tc.status, tc.want)
		}
	}
	if _, err := ParseSettings(instanceSettings(t, srv.URL, map[string]any{"maxAnswerSize": "lots"}, nil)); err == nil ||
		!strings.Contains(err.Error(), `maxAnswerSize "lots" is not a size`) {
		t.Errorf("bad size: %v", err)
	}
}
