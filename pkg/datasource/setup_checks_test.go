package datasource

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/setup"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// The brief's two most overlooked settings, read from Prometheus' status API: the test bed's
// inference job scraped every minute and 7 days of retention both warn, with the fix, and the
// baseline's lost day is named; the probe job at 15 s is not blamed.
func TestHealthChecksScrapeIntervalAndRetention(t *testing.T) {
	dir, _ := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir, Retention: "7d", ConfigYAML: "global:\n  scrape_interval: 1m\nscrape_configs:\n" +
		"- job_name: inference\n  static_configs: [{targets: ['127.0.0.1:1']}]\n" +
		"- job_name: inferscope-probe\n  scrape_interval: 15s\n  static_configs: [{targets: ['127.0.0.1:2']}]\n"})
	d := newTestDS(t, instanceSettings(t, srv.URL, map[string]any{}, nil))
	res, st := checkHealth(t, d)
	if res.Status != backend.HealthStatusOk {
		t.Fatalf("health %v: %s", res.Status, res.Message)
	}
	got := map[string]setup.Finding{}
	for _, f := range st.Checks {
		got[f.Check] = f
	}
	if f := got["scrape interval"]; f.Level != setup.Warn || !strings.Contains(f.Message, "inference every 1m0s") || strings.Contains(f.Message, "inferscope-probe every") {
		t.Errorf("scrape interval: %+v", f)
	}
	if f := got["retention"]; f.Level != setup.Warn || !strings.Contains(f.Message, "at most 6") {
		t.Errorf("retention: %+v", f)
	}
	for _, want := range []string{"warning: scrape interval: scraped less often than every 15s: inference every 1m0s",
		"fix: set scrape_interval: 15s", "warning: retention: 7d of samples kept", "fix: start Prometheus with --storage.tsdb.retention.time=30d"} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("health message lacks %q:\n%s", want, res.Message)
		}
	}
}

// A store without Prometheus' status API (VictoriaMetrics answers 400 there) is healthy, and
// the checks say they could not be made.
func TestHealthChecksOnAStoreWithoutStatusAPI(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/status/buildinfo", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":{"version":"2.24.0"}}`))
	})
	mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/status/") {
			http.Error(w, "unsupported path", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":[]}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	d := newTestDS(t, instanceSettings(t, srv.URL, map[string]any{}, nil))
	res, st := checkHealth(t, d)
	if res.Status != backend.HealthStatusOk || len(st.Checks) != 2 {
		t.Fatalf("health %v %q, checks %+v", res.Status, res.Message, st.Checks)
	}
	for _, f := range st.Checks {
		if f.Level != setup.Unchecked || !strings.Contains(f.Message, "could not be checked") {
			t.Errorf("%+v", f)
		}
	}
	if !strings.Contains(res.Message, "retention: the retention could not be checked") {
		t.Errorf("message %q", res.Message)
	}
}
