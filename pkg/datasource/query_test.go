package datasource

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

func dataQuery(refID string, from, to time.Time, interval time.Duration, model any) backend.DataQuery {
	var raw []byte
	switch m := model.(type) {
	case string:
		raw = []byte(m)
	default:
		raw, _ = json.Marshal(m)
	}
	return backend.DataQuery{RefID: refID, JSON: raw, Interval: interval, MaxDataPoints: 0,
		TimeRange: backend.TimeRange{From: from, To: to}}
}

func TestQueryDataEachQueryItsOwnAnswer(t *testing.T) {
	srv := startPromWithCounters(t, promtest.Options{})
	d := newTestDS(t, instanceSettings(t, srv.URL, nil, nil))
	from, to := dataStart.Add(10*time.Minute), dataStart.Add(50*time.Minute)
	step := 15 * time.Second

	req := &backend.QueryDataRequest{Queries: []backend.DataQuery{
		dataQuery("A", from, to, step, map[string]any{"refId": "A", "queryType": "promql",
			"expr": "sum by (model_name) (rate(inference_requests_total[1m]))", "legendFormat": "{{model_name}} req/s"}),
		dataQuery("B", from, to, step, `{"refId":"B","queryType":"promql","expr":`),
		dataQuery("C", from, to, step, map[string]any{"refId": "C", "queryType": "promql", "expr": "sum(rate(inference_requests_total[1m]) by"}),
		dataQuery("D", from, to, step, map[string]any{"refId": "D", "queryType": "latency", "model": "resnet50"}),
		dataQuery("E", from, to, step, map[string]any{"refId": "E", "queryType": "promql", "expr": "   "}),
		dataQuery("F", from, to, step, map[string]any{"refId": "F", "queryType": "promql", "expr": `inference_requests_total{model_name="absent"}`}),
		dataQuery("G", from, to, step, map[string]any{"refId": "G", "queryType": "promql", "expr": 42}),
	}}
	resp, err := d.QueryData(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Responses) != len(req.Queries) {
		t.Fatalf("%d answers for %d queries", len(resp.Responses), len(req.Queries))
	}

	a := resp.Responses["A"]
	if a.Error != nil {
		t.Fatalf("A: %v", a.Error)
	}
	if len(a.Frames) != len(counterRates) {
		t.Fatalf("A: %d frames, want %d", len(a.Frames), len(counterRates))
	}
	wantPoints := int(to.Sub(from)/step) + 1
	for _, f := range a.Frames {
		if f.Meta == nil || f.Meta.Type != data.FrameTypeTimeSeriesMulti || f.Meta.TypeVersion != (data.FrameTypeVersion{0, 1}) {
			t.Errorf("A: frame meta %+v", f.Meta)
		}
		if f.Meta.ExecutedQueryString != "Expr: sum by (model_name) (rate(inference_requests_total[1m]))\nStep: 15s" {
			t.Errorf("A: executed %q", f.Meta.ExecutedQueryString)
		}
		if len(f.Fields) != 2 || f.Fields[0].Type() != data.FieldTypeTime || f.Fields[1].Type() != data.FieldTypeFloat64 {
			t.Fatalf("A: fields %v", f.Fields)
		}
		model := f.Fields[1].Labels["model_name"]
		rate, ok := counterRates[model]
		if !ok {
			t.Fatalf("A: unexpected series %v", f.Fields[1].Labels)
		}
		if got := f.Fields[1].Config.DisplayNameFromDS; got != model+" req/s" {
			t.Errorf("A: display name %q", got)
		}
		if f.Rows() != wantPoints {
			t.Errorf("A %s: %d points, want %d", model, f.Rows(), wantPoints)
		}
		for i := 0; i < f.Rows(); i++ {
			ts := f.Fields[0].At(i).(time.Time)
			if want := from.Add(time.Duration(i) * step); !ts.Equal(want) {
				t.Fatalf("A %s: point %d at %v, want %v", model, i, ts, want)
			}
			// The counter grows linearly, so rate() is exact up to rounding.
			if v := f.Fields[1].At(i).(float64); math.Abs(v-rate) > 1e-9*rate {
				t.Fatalf("A %s: rate %v at %v, want %v", model, v, ts, rate)
			}
		}
		if f.RefID != "A" {
			t.Errorf("A: frame refId %q", f.RefID)
		}
	}

	wantErr := func(ref string, status backend.Status, prefix string) {
		t.Helper()
		r := resp.Responses[ref]
		if r.Error == nil || !strings.HasPrefix(r.Error.Error(), prefix) || r.Status != status {
			t.Errorf("%s: status %v error %v, want %v %q…", ref, r.Status, r.Error, status, prefix)
		}
	}
	wantErr("B", backend.StatusBadRequest, "the query JSON is malformed: unexpected end of JSON input")
	wantErr("C", backend.StatusBadRequest, "Prometheus rejected the query: 1:")
	if r := resp.Responses["C"]; r.Error == nil || !strings.Contains(r.Error.Error(), "parse error") {
		t.Errorf("C: %v", r.Error)
	}
	// Only inference_requests_total exists: no profile matches, and the settings name none.
	wantErr("D", backend.StatusBadRequest, `no metric profile detected: no known inference-server metrics found`)
	wantErr("E", backend.StatusBadRequest, "the PromQL expression (expr) is empty")
	wantErr("G", backend.StatusBadRequest, "field expr must be a string, got 42")

	f := resp.Responses["F"]
	if f.Error != nil || len(f.Frames) != 1 || len(f.Frames[0].Fields) != 0 || f.Frames[0].Meta.Type != data.FrameTypeTimeSeriesMulti {
		t.Errorf("F (no data): %+v %v", f.Frames, f.Error)
	}
}

func TestQueryDataStepAndLimits(t *testing.T) {
	srv := startPromWithCounters(t, promtest.Options{})
	d := newTestDS(t, instanceSettings(t, srv.URL, nil, nil))
	end := dataStart.Add(time.Hour)

	// 30 days at a 1 s interval would be 2.6 M points: the step is raised to stay within 11,000.
	from := end.Add(-30 * 24 * time.Hour)
	resp, _ := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
		dataQuery("A", from, end, time.Second, map[string]any{"expr": "vector(1)"}),
	}})
	a := resp.Responses["A"]
	if a.Error != nil {
		t.Fatal(a.Error)
	}
	if rows := a.Frames[0].Rows(); rows > 11001 || rows < 10990 {
		t.Errorf("30 days: %d points", rows)
	}
	if got := a.Frames[0].Meta.ExecutedQueryString; got != "Expr: vector(1)\nStep: 3m55.637s" {
		t.Errorf("30 days: executed %q", got)
	}

	// maxDataPoints coarsens the step too.
	q := dataQuery("B", end.Add(-time.Hour), end, time.Second, map[string]any{"expr": "vector(1)"})
	q.MaxDataPoints = 100
	resp, _ = d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	if got := resp.Responses["B"].Frames[0].Meta.ExecutedQueryString; got != "Expr: vector(1)\nStep: 36s" {
		t.Errorf("maxDataPoints 100: executed %q", got)
	}

	// The series limit.
	limited := New(context.Background(), instanceSettings(t, srv.URL, nil, nil), "test", Limits{MaxSeries: 2, MaxPoints: 11000, MaxConcurrency: 2, ProbeTimeout: time.Second})
	defer limited.Dispose()
	resp, _ = limited.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
		dataQuery("C", dataStart, end, 15*time.Second, map[string]any{"expr": "inference_requests_total"}),
	}})
	if r := resp.Responses["C"]; r.Error == nil || r.Error.Error() != "the query returned 3 series, more than the limit of 2: aggregate it (for example sum by (model_name) (...)) or narrow the selector" {
		t.Errorf("series limit: %v", r.Error)
	}

	// A time range that ends before it starts.
	resp, _ = d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
		dataQuery("D", end, dataStart, 15*time.Second, map[string]any{"expr": "vector(1)"}),
	}})
	if r := resp.Responses["D"]; r.Error == nil || !strings.HasPrefix(r.Error.Error(), "the time range ends (2024-03-01T12:00:00Z) before it starts") {
		t.Errorf("reversed range: %v", r.Error)
	}
}

func TestQueryDataSettingsErrorPerQuery(t *testing.T) {
	d := newTestDS(t, instanceSettings(t, "", nil, nil))
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
		dataQuery("A", dataStart, dataStart.Add(time.Hour), time.Minute, map[string]any{"expr": "up"}),
		dataQuery("B", dataStart, dataStart.Add(time.Hour), time.Minute, map[string]any{"expr": "up"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"A", "B"} {
		if r := resp.Responses[ref]; r.Error == nil || r.Error.Error() != "Prometheus URL is empty: set it in the data source's HTTP section" {
			t.Errorf("%s: %v", ref, r.Error)
		}
	}
}

func TestQueryDataPrometheusDown(t *testing.T) {
	u := promtest.ClosedURL(t)
	d := newTestDS(t, instanceSettings(t, u, nil, nil))
	resp, _ := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
		dataQuery("A", dataStart, dataStart.Add(time.Hour), time.Minute, map[string]any{"expr": "up"}),
	}})
	if r := resp.Responses["A"]; r.Error == nil || r.Error.Error() != "cannot reach Prometheus at "+u+": connection refused" || r.Status != backend.StatusBadGateway {
		t.Errorf("Prometheus down: %v %v", r.Status, r.Error)
	}
}

// A Prometheus that accepted the connection but never answers: cancelling the request context
// must end QueryData and close the connection to Prometheus.
func TestQueryDataCancelStopsTheRequest(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	received := make(chan struct{})
	closed := make(chan struct{})
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		buf := make([]byte, 4096)
		if _, err := conn.Read(buf); err == nil {
			close(received)
		}
		// Hold the request unanswered until the client goes away.
		_, _ = io.Copy(io.Discard, conn)
		close(closed)
	}()

	d := newTestDS(t, instanceSettings(t, "http://"+l.Addr().String(), map[string]any{"timeout": 300}, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *backend.QueryDataResponse, 1)
	go func() {
		resp, _ := d.QueryData(ctx, &backend.QueryDataRequest{Queries: []backend.DataQuery{
			dataQuery("A", dataStart, dataStart.Add(time.Hour), time.Minute, map[string]any{"expr": "up"}),
		}})
		done <- resp
	}()
	select {
	case <-received:
	case <-time.After(time.Minute):
		t.Fatal("the query never reached the server")
	}
	cancel()
	var resp *backend.QueryDataResponse
	select {
	case resp = <-done:
	case <-time.After(time.Minute):
		t.Fatal("QueryData did not return after the context was cancelled")
	}
	r := resp.Responses["A"]
	if r.Error == nil || !strings.Contains(r.Error.Error(), "cancelled") {
		t.Errorf("cancelled query: %v", r.Error)
	}
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("the connection to Prometheus stayed open after cancel")
	}
}

func TestDisplayName(t *testing.T) {
	labels := map[string]string{"__name__": "inference_requests_total", "model_name": "resnet50", "model_version": "v2"}
	cases := []struct{ legend, want string }{
		{"{{model_name}} {{ model_version }}", "resnet50 v2"},
		{"{{missing}}x", "x"},
		{"plain", "plain"},
		{"", `inference_requests_total{model_name="resnet50", model_version="v2"}`},
		{"__auto", `inference_requests_total{model_name="resnet50", model_version="v2"}`},
	}
	for _, c := range cases {
		if got := displayName(c.legend, labels, "expr"); got != c.want {
			t.Errorf("displayName(%q) = %q, want %q", c.legend, got, c.want)
		}
	}
	if got := displayName("", map[string]string{}, "sum(rate(x[5m]))"); got != "sum(rate(x[5m]))" {
		t.Errorf("no labels: %q", got)
	}
	if got := displayName("", map[string]string{"model_name": "a"}, "e"); got != `{model_name="a"}` {
		t.Errorf("no name: %q", got)
	}
}

// FuzzQueryJSON feeds arbitrary query JSON through the whole QueryData path (against a closed
// port, so nothing waits): every query gets an answer and nothing panics.
func FuzzQueryJSON(f *testing.F) {
	for _, seed := range []string{
		`{"refId":"A","queryType":"promql","expr":"up"}`, `{}`, `null`, ``, `[]`, `"x"`, `{"queryType":7}`,
		`{"queryType":"promql","expr":"up","intervalMs":-5,"maxDataPoints":-1}`, `{"queryType":"promql","expr":{"a":1}}`,
		`{"queryType":"split"}`, `{"queryType":"promql","expr":"up","legendFormat":"{{"}`, "{\"expr\":\"\xff\"}",
		`{"queryType":"latency","model":"a|b","quantiles":[0.5,"0.9",2]}`, `{"queryType":"baseline","days":"7","window":"1h","for":5}`,
		`{"queryType":"throughput","by":"instance","warmupFilter":"no"}`, `{"queryType":"errors","instance":[1]}`,
		`{"queryType":"jitter","threshold":1e400,"rateInterval":"99999999999999y"}`,
	} {
		f.Add([]byte(seed), int64(60_000))
	}
	u := promtest.ClosedURL(f)
	d := New(context.Background(), instanceSettings(f, u, nil, nil), "fuzz", DefaultLimits)
	f.Fuzz(func(t *testing.T, raw []byte, intervalMs int64) {
		q := backend.DataQuery{RefID: "A", JSON: raw, Interval: time.Duration(intervalMs) * time.Millisecond,
			TimeRange: backend.TimeRange{From: dataStart, To: dataStart.Add(time.Hour)}}
		resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
		if err != nil {
			t.Fatal(err)
		}
		r, ok := resp.Responses["A"]
		if !ok {
			t.Fatal("no answer")
		}
		if r.Error == nil {
			t.Fatalf("a query against a closed port succeeded: %s", raw)
		}
	})
}

// FuzzSettings feeds arbitrary jsonData through settings parsing and the SDK's HTTP options,
// which type-assert some fields: nothing may panic.
func FuzzSettings(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `[]`, `{"basicAuth":true,"basicAuthUser":1}`, `{"httpHeaderName1":false}`, `{"access":3}`,
		`{"tlsAuthWithCACert":true,"serverName":[]}`, `{"probeUrls":"http://x"}`, `{"probeUrls":[1,2]}`,
		`{"warmupWindow":5}`, `{"timeout":"30"}`, `{"sigV4Auth":true,"sigV4Region":{}}`, `{"url":1}`,
	} {
		f.Add([]byte(seed), "http://127.0.0.1:9090")
	}
	f.Fuzz(func(t *testing.T, raw []byte, url string) {
		s := backend.DataSourceInstanceSettings{URL: url, JSONData: raw, DecryptedSecureJSONData: map[string]string{}}
		d := New(context.Background(), s, "fuzz", DefaultLimits)
		defer d.Dispose()
		if _, err := d.Settings(); err == nil && d.prom == nil {
			t.Fatal("valid settings without a Prometheus client")
		}
	})
}
