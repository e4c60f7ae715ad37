package datasource

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/setup"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// TorchServe is found without its ts_* metrics: one server in its default metrics_mode=log (its
// metrics API answers with no samples) and one in prometheus mode whose metrics.yaml dropped the
// ts_* counters (only the frontend's host and model metrics). A real Prometheus scrapes both;
// the health check warns, names the targets and the metrics, and says metrics_mode=prometheus is
// needed. Forcing the torchserve profile says the same in its warning.
func TestHealthSaysTorchServeNeedsPrometheusMode(t *testing.T) {
	frontend, err := os.ReadFile("../profile/testdata/torchserve_frontend.prom")
	if err != nil {
		t.Fatal(err)
	}
	serve := func(body []byte) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			_, _ = w.Write(body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	logMode, promMode := serve(nil), serve(frontend)
	host := func(s *httptest.Server) string { u, _ := url.Parse(s.URL); return u.Host }
	srv := promtest.Start(t, promtest.Options{ConfigYAML: "global:\n  scrape_interval: 1s\nscrape_configs:\n" +
		"- job_name: torchserve\n  static_configs: [{targets: ['" + host(logMode) + "']}]\n" +
		"- job_name: ts-frontend\n  static_configs: [{targets: ['" + host(promMode) + "']}]\n"})
	waitScraped(t, srv.URL, `count(scrape_samples_scraped) == 2 and count(Requests2XX) == 1`)

	d := newTestDS(t, instanceSettings(t, srv.URL, map[string]any{}, nil))
	res, st := checkHealth(t, d)
	var found []setup.Finding
	for _, f := range st.Checks {
		if f.Check == engine.CheckTorchServeMode {
			found = append(found, f)
		}
	}
	if len(found) != 2 {
		t.Fatalf("%d TorchServe findings, want 2: %+v", len(found), st.Checks)
	}
	for _, f := range found {
		if f.Level != setup.Warn || !strings.Contains(f.Fix, "metrics_mode=prometheus") {
			t.Errorf("finding %+v", f)
		}
	}
	for _, want := range []string{
		"TorchServe's own metrics are in Prometheus (Requests2XX, Requests4XX, Requests5XX, WorkerThreadTime, WorkerLoadTime, HandlerTime, PredictionTime) but not ts_inference_requests_total",
		"TorchServe scrape targets answer /metrics with no samples (torchserve/" + host(logMode) + "): TorchServe's default metrics_mode=log",
		"fix: set metrics_mode=prometheus in TorchServe's config.properties",
	} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("health message lacks %q:\n%s", want, res.Message)
		}
	}
	if st.Profile.Detected {
		t.Errorf("a profile detected from TorchServe without ts_* metrics: %+v", st.Profile)
	}

	forced := newTestDS(t, instanceSettings(t, srv.URL, map[string]any{"profile": "torchserve"}, nil))
	_, st = checkHealth(t, forced)
	if !strings.Contains(st.Profile.Warning, "TorchServe serves them only with metrics_mode=prometheus") {
		t.Errorf("forced profile warning %q", st.Profile.Warning)
	}
}

// waitScraped polls Prometheus until expr has a result (the scrapes have happened).
func waitScraped(t *testing.T, base, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/api/v1/query?" + url.Values{"query": {expr}}.Encode())
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), `"result":[{`) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("Prometheus never answered %s", expr)
}
