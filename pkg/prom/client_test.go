package prom

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// storedValues are label values written into a real TSDB; each series' sample value is its
// index, so a query that selects the wrong series shows it.
var storedValues = []string{
	"plain",
	`"`,
	`\`,
	`"}`,
	`"} or vector(1)`,
	`x", job=~".+`,
	`a|b`,
	`a`,
	`.*`,
	"line\nbreak",
	"tab\there",
	`\x41`,
	"A",
	"ünïcødé 模型 🚀",
	"\ufffd",
	"1.0",
	"1x0",
}

var blockTime = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func openMetricsValue(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

// startStored starts Prometheus 2.x on a TSDB holding probe_value{v=<storedValues[i]>} = i at
// blockTime and blockTime+1m.
func startStored(t *testing.T) *Client {
	t.Helper()
	var om strings.Builder
	om.WriteString("# HELP probe_value Index of the label value.\n# TYPE probe_value gauge\n")
	for i, v := range storedValues {
		for _, ts := range []time.Time{blockTime, blockTime.Add(time.Minute)} {
			fmt.Fprintf(&om, "probe_value{v=\"%s\"} %d %d\n", openMetricsValue(v), i, ts.Unix())
		}
	}
	om.WriteString("# EOF\n")
	srv := promtest.StartWithHistory(t, om.String(), promtest.Options{})
	c, err := New(srv.URL, &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestSelectorsOnRealPrometheus checks on the Prometheus release we ship against that an
// equality matcher selects exactly the series with that value and MatchAny exactly the set.
func TestSelectorsOnRealPrometheus(t *testing.T) {
	c := startStored(t)
	ctx := context.Background()
	at := blockTime.Add(30 * time.Second)

	for i, v := range storedValues {
		sel, err := Selector("probe_value", Eq("v", v))
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Query(ctx, sel, at, 0)
		if err != nil {
			t.Fatalf("value %q: %s: %v", v, sel, err)
		}
		if len(res.Samples) != 1 || res.Samples[0].V != float64(i) || res.Samples[0].Labels["v"] != v {
			t.Errorf("value %q: %s selected %v, want only series %d", v, sel, res.Samples, i)
		}
	}

	sets := [][]string{{`a|b`, `a`}, {`.*`}, {"A"}, {`\x41`, "1.0"}, {`"}`, "line\nbreak", "ünïcødé 模型 🚀"}, {"\ufffd", `\`}}
	for _, set := range sets {
		sel, err := Selector("probe_value", In("v", set...))
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Query(ctx, sel, at, 0)
		if err != nil {
			t.Fatalf("set %q: %s: %v", set, sel, err)
		}
		var got []string
		for _, s := range res.Samples {
			got = append(got, s.Labels["v"])
			if want := float64(slices.Index(storedValues, s.Labels["v"])); s.V != want {
				t.Errorf("set %q: series %q has value %v, want %v", set, s.Labels["v"], s.V, want)
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(set))
		if !slices.Equal(got, want) {
			t.Errorf("set %q: %s selected %q", set, sel, got)
		}
	}
}

func TestClientQueriesOnRealPrometheus(t *testing.T) {
	c := startStored(t)
	ctx := context.Background()

	bi, err := c.BuildInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(bi.Version, "2.") && !strings.HasPrefix(bi.Version, "3.") || bi.Store != StorePrometheus {
		t.Errorf("BuildInfo %+v", bi)
	}

	vals, err := c.LabelValues(ctx, "v", nil, blockTime.Add(-time.Hour), blockTime.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := slices.Sorted(slices.Values(storedValues)); !slices.Equal(vals, want) {
		t.Errorf("LabelValues = %q, want %q", vals, want)
	}

	// A range query of vector(time()) returns its own timestamps: one point per step.
	start, step := blockTime, 15*time.Second
	res, err := c.QueryRange(ctx, RangeQuery{Expr: "vector(time())", Start: start, End: start.Add(10 * step), Step: step})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Series) != 1 || len(res.Series[0].Points) != 11 {
		t.Fatalf("QueryRange vector(time()): %v", res.Series)
	}
	for i, p := range res.Series[0].Points {
		want := start.Add(time.Duration(i) * step)
		if !p.T.Equal(want) || p.V != float64(want.Unix()) {
			t.Errorf("point %d = %v, want %v at %v", i, p, float64(want.Unix()), want)
		}
	}

	// The series limit refuses before converting.
	_, err = c.QueryRange(ctx, RangeQuery{Expr: "probe_value", Start: blockTime, End: blockTime.Add(time.Minute), Step: step, MaxSeries: 3})
	if KindOf(err) != KindLimit || !strings.Contains(err.Error(), fmt.Sprintf("returned %d series, more than the limit of 3", len(storedValues))) {
		t.Errorf("limit: %v", err)
	}

	scalar, err := c.Query(ctx, "1 + 1", blockTime, 0)
	if err != nil || len(scalar.Samples) != 1 || scalar.Samples[0].V != 2 {
		t.Errorf("scalar query: %v %v", scalar, err)
	}

	_, err = c.Query(ctx, "sum(rate(probe_value[5m]) by", blockTime, 0)
	if KindOf(err) != KindBadQuery || !strings.Contains(err.Error(), "Prometheus rejected the query: ") || !strings.Contains(err.Error(), "parse error") {
		t.Errorf("bad PromQL: kind %v, %v", KindOf(err), err)
	}
	_, err = c.Query(ctx, "  ", blockTime, 0)
	if KindOf(err) != KindBadQuery {
		t.Errorf("empty expression: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.Query(cctx, "up", blockTime, 0)
	if KindOf(err) != KindCanceled {
		t.Errorf("cancelled context: kind %v, %v", KindOf(err), err)
	}
}

func TestClientUnreachable(t *testing.T) {
	addr := promtest.ClosedURL(t)
	c, err := New(addr, &http.Client{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.BuildInfo(context.Background())
	if want := "cannot reach Prometheus at " + addr + ": connection refused"; KindOf(err) != KindUnreachable || err.Error() != want {
		t.Errorf("closed port: %v, want %q", err, want)
	}
}

// A server that is not Prometheus (a login page, a proxy's error page) is named as such.
func TestClientNotPrometheus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Welcome to nginx!</body></html>")
	}))
	defer srv.Close()
	c, err := New(srv.URL+"/prom", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.BuildInfo(context.Background())
	if KindOf(err) != KindNotPrometheus || !strings.Contains(err.Error(), "is not a Prometheus HTTP API (HTTP 200") || !strings.Contains(err.Error(), "Welcome to nginx") {
		t.Errorf("garbage answer: kind %v, %v", KindOf(err), err)
	}
	_, err = c.QueryRange(context.Background(), RangeQuery{Expr: "up", Start: blockTime, End: blockTime.Add(time.Minute), Step: time.Second})
	if KindOf(err) != KindNotPrometheus {
		t.Errorf("garbage answer to a query: kind %v, %v", KindOf(err), err)
	}
}

func TestNewRejectsMalformedURLs(t *testing.T) {
	for _, raw := range []string{"", "localhost:9090", "ftp://x", "http://", "http://user:secret@[::1"} {
		_, err := New(raw, nil)
		if err == nil {
			t.Errorf("New(%q) accepted", raw)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("New(%q) echoes the password: %v", raw, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	if got := RedactURL("https://admin:hunter2@prom.example:9090/prometheus?token=abc#x"); got != "https://prom.example:9090/prometheus" {
		t.Errorf("RedactURL = %s", got)
	}
}

func TestStepFor(t *testing.T) {
	start := blockTime
	cases := []struct {
		span, min time.Duration
		want      time.Duration
	}{
		{time.Hour, 15 * time.Second, 15 * time.Second},
		{time.Hour, 0, time.Second},
		{time.Hour, 200 * time.Millisecond, time.Second},
		{30 * 24 * time.Hour, 15 * time.Second, 235637 * time.Millisecond}, // 2,592,000 s / 11,000, rounded up to ms
		{11001 * time.Second, time.Second, 1001 * time.Millisecond},
	}
	for _, c := range cases {
		got := StepFor(start, start.Add(c.span), c.min, 11000)
		if got != c.want {
			t.Errorf("StepFor(%v, %v) = %v, want %v", c.span, c.min, got, c.want)
		}
		if c.span/got > 11000 {
			t.Errorf("StepFor(%v, %v) = %v gives more than 11000 points", c.span, c.min, got)
		}
	}
}

// A server that refuses POST (some proxies) is asked again with GET, as client_golang does, with
// the same parameters, the address's own included.
func TestQueryFallsBackToGET(t *testing.T) {
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		calls = append(calls, r.Method+" "+r.Form.Get("query")+" "+r.Form.Get("step")+" "+r.Form.Get("tenant"))
		if r.Method == http.MethodPost {
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"1"},"values":[[1709294400,"7"]]}]}}`)
	}))
	defer srv.Close()
	c, err := New(srv.URL+"/?tenant=t1", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.QueryRange(context.Background(), RangeQuery{Expr: "up", Start: blockTime, End: blockTime.Add(time.Minute), Step: 1500 * time.Millisecond})
	if err != nil || len(res.Series) != 1 || res.Series[0].Points[0].V != 7 || !res.Series[0].Points[0].T.Equal(blockTime) {
		t.Fatalf("QueryRange: %+v, %v", res, err)
	}
	if want := []string{"POST up 1.5 t1", "GET up 1.5 t1"}; !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
}

// An answer that stops halfway is named by what stopped it, not as malformed JSON: the client's
// timeout, or the caller's cancelling.
func TestAnswerStalledMidBody(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"1"},"values":[[1709294400,"7"],`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	q := RangeQuery{Expr: "up", Start: blockTime, End: blockTime.Add(time.Minute), Step: time.Second}

	c, err := New(srv.URL, &http.Client{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.QueryRange(context.Background(), q)
	if want := "Prometheus at " + srv.URL + " did not answer within 200ms"; KindOf(err) != KindTimeout || err.Error() != want {
		t.Errorf("client timeout mid-body: kind %d, %v; want %q", KindOf(err), err, want)
	}

	c, err = New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = c.QueryRange(ctx, q)
	if KindOf(err) != KindCanceled {
		t.Errorf("cancelled mid-body: kind %d, %v", KindOf(err), err)
	}
}
