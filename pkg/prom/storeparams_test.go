package prom

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a loopback HTTP server that answers the Prometheus API with a given build info and
// empty results, and records the URL query parameters of every call: a protocol test of what
// the client sends, not a stand-in for a store's computation.
type recorder struct {
	mu    sync.Mutex
	calls []*http.Request
}

func (r *recorder) serve(t *testing.T, buildInfo string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_ = req.ParseForm()
		r.mu.Lock()
		r.calls = append(r.calls, req)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(req.URL.Path, "/status/buildinfo"):
			w.Write([]byte(`{"status":"success","data":` + buildInfo + `}`))
		case strings.HasSuffix(req.URL.Path, "/query_range"):
			w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
		case strings.HasSuffix(req.URL.Path, "/query"):
			w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
		default:
			w.Write([]byte(`{"status":"success","data":[]}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (r *recorder) params(path string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.calls {
		if strings.HasSuffix(c.URL.Path, path) {
			out = append(out, "dedup="+c.URL.Query().Get("dedup")+" partial_response="+c.URL.Query().Get("partial_response"))
		}
	}
	return out
}

func (r *recorder) count(path string) int { return len(r.params(path)) }

func use(t *testing.T, c *Client) {
	t.Helper()
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	if _, err := c.Query(ctx, "up", now, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.QueryRange(ctx, RangeQuery{Expr: "up", Start: now.Add(-time.Hour), End: now, Step: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LabelValues(ctx, "job", nil, now.Add(-time.Hour), now); err != nil {
		t.Fatal(err)
	}
}

const (
	thanosBuildInfo     = `{"version":"0.39.2","revision":"5e1c3a9","branch":"HEAD","goVersion":"go1.24.4"}`
	prometheusBuildInfo = `{"version":"2.42.0","revision":"225c61122d88b01d1f0eaaee0e05b6f3e0567ac0","branch":"HEAD","goVersion":"go1.19.8"}`
)

func TestThanosParametersGoToThanosOnly(t *testing.T) {
	no, yes := false, true
	opts := ThanosOptions{Dedup: &no, PartialResponse: &yes}

	var th recorder
	c, err := New(th.serve(t, thanosBuildInfo).URL, nil, Thanos(opts))
	if err != nil {
		t.Fatal(err)
	}
	use(t, c)
	use(t, c)
	for _, p := range []string{"/api/v1/query", "/api/v1/query_range", "/api/v1/label/job/values"} {
		got := th.params(p)
		if len(got) != 2 || got[0] != "dedup=false partial_response=true" || got[1] != got[0] {
			t.Errorf("Thanos %s got %v, want dedup=false partial_response=true on both calls", p, got)
		}
	}
	if n := th.count("/status/buildinfo"); n != 1 {
		t.Errorf("the build info was asked %d times, want once per client", n)
	}

	var pr recorder
	c, err = New(pr.serve(t, prometheusBuildInfo).URL, nil, Thanos(opts))
	if err != nil {
		t.Fatal(err)
	}
	use(t, c)
	if got := pr.params("/api/v1/query"); len(got) != 1 || got[0] != "dedup= partial_response=" {
		t.Errorf("Prometheus got %v, want no Thanos parameters", got)
	}

	// Nothing configured: nothing sent, and the store is not even asked.
	var plain recorder
	c, err = New(plain.serve(t, thanosBuildInfo).URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	use(t, c)
	if got := plain.params("/api/v1/query_range"); len(got) != 1 || got[0] != "dedup= partial_response=" {
		t.Errorf("without settings Thanos got %v, want its own defaults", got)
	}
	if n := plain.count("/status/buildinfo"); n != 0 {
		t.Errorf("without settings the build info was asked %d times", n)
	}
}

func TestStoreURLForms(t *testing.T) {
	for _, c := range []struct {
		url, refused string // refused: a part of the message, "" when accepted
	}{
		{"http://prometheus:9090", ""},
		{"http://thanos-query:10902/", ""},
		{"http://mimir:8080/prometheus", ""},
		{"http://cortex/api/prom", ""},
		{"http://vmselect:8481/select/0/prometheus", ""},
		{"http://vmselect:8481/select/42:7/prometheus/", ""},
		{"http://prometheus:9090/api/v1", "ends in the API path \"/api/v1\""},
		{"http://mimir:8080/prometheus/api/v1/query", "give the server's base URL"},
		{"http://vmselect:8481/select/0", "/select/0/prometheus"},
		{"http://vmselect:8481/select/prometheus", "has no tenant"},
	} {
		err := CheckStoreURL(c.url)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s refused: %v", c.url, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s: got %v, want a refusal naming %q", c.url, err, c.refused)
		}
		if _, nerr := New(c.url, nil); (nerr == nil) != (c.refused == "") {
			t.Errorf("New(%s): %v", c.url, nerr)
		}
	}
}

// A cluster's query API without its prefix answers 404: the error names the prefixes.
func TestNotFoundNamesThePrefix(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Query(context.Background(), "up", time.Now(), 0)
	if err == nil || !strings.Contains(err.Error(), "/prometheus prefix") || !strings.Contains(err.Error(), "/select/<accountID>/prometheus") {
		t.Errorf("got %v, want the prefixes named", err)
	}
}

// A store's own limit comes back named, with how to narrow the query, and typed: the engine
// splits a read in time only for the sample limits.
func TestStoreLimitNamed(t *testing.T) {
	for _, c := range []struct {
		body, want string
		limit      StoreLimit
	}{
		{`{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}`, "--query.max-samples", StoreLimitSamples},
		{`{"status":"error","errorType":"422","error":"cannot select more than -search.maxSamplesPerQuery=1000000 samples"}`, "-search.maxSamplesPerQuery", StoreLimitVictoriaSamples},
		{`{"status":"error","errorType":"bad_data","error":"the number of matching timeseries exceeds 300000; either narrow down the search or increase -search.maxUniqueTimeseries"}`, "VictoriaMetrics -search.max*", StoreLimitVictoria},
		{`{"status":"error","errorType":"execution","error":"the query exceeded the maximum number of series (limit: 1000 series) (err-mimir-max-series-per-query)"}`, "Mimir/Cortex per-query limit", StoreLimitMimir},
		{`{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`, "--query.timeout", 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			w.Write([]byte(c.body))
		}))
		cl, err := New(srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.Query(context.Background(), "up", time.Now(), 0)
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "narrow the query") {
			t.Errorf("got %v, want %q and how to narrow", err, c.want)
		}
		if got := StoreLimitOf(err); got != c.limit || got.InTime() != (c.limit == StoreLimitSamples || c.limit == StoreLimitVictoriaSamples) {
			t.Errorf("%s: limit %d, want %d", c.want, got, c.limit)
		}
	}
}
