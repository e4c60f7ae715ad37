package datasource

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

func callResource(t *testing.T, d *Datasource, method, path string) *backend.CallResourceResponse {
	t.Helper()
	ans := resourceAnswer(t, d, &backend.CallResourceRequest{Method: method, Path: path})
	if ct := ans.Headers["Content-Type"]; len(ct) != 1 || ct[0] != "application/json" {
		t.Errorf("%s %s: Content-Type %v", method, path, ct)
	}
	return ans
}

func TestResources(t *testing.T) {
	srv := startPromWithCounters(t, promtest.Options{})
	closed := promtest.ClosedURL(t)
	d := newTestDS(t, instanceSettings(t, srv.URL, map[string]any{"probeUrls": []string{closed}, "warmupWindow": "5m"}, nil))

	r := callResource(t, d, http.MethodGet, "setup")
	if r.Status != http.StatusOK {
		t.Fatalf("setup: %d %s", r.Status, r.Body)
	}
	var st SetupStatus
	if err := json.Unmarshal(r.Body, &st); err != nil {
		t.Fatal(err)
	}
	if !st.Prometheus.OK || st.Prometheus.URL != srv.URL || st.Prometheus.Version == "" || st.Prometheus.Error != "" {
		t.Errorf("setup prometheus %+v", st.Prometheus)
	}
	if st.Profile.Name != "auto" || st.Profile.Detected || !strings.HasPrefix(st.Profile.Reason, "no known inference-server metrics") || st.WarmupWindow != "5m" {
		t.Errorf("setup %+v", st)
	}
	if len(st.Probes) != 1 || st.Probes[0].OK || st.Probes[0].Error != "cannot reach probe at "+closed+": connection refused" {
		t.Errorf("setup probes %+v", st.Probes)
	}
	// The JSON keys are the public contract.
	var raw map[string]map[string]any
	_ = json.Unmarshal(r.Body, &raw)
	for _, k := range []string{"url", "ok", "version", "error"} {
		if _, ok := raw["prometheus"][k]; !ok {
			t.Errorf("setup.prometheus lacks %q: %s", k, r.Body)
		}
	}

	r = callResource(t, d, http.MethodGet, "/ping/")
	if r.Status != http.StatusOK || string(r.Body) != `{"plugin":"inferscope-monitor-datasource","status":"ok","version":"1.2.3-test"}` {
		t.Errorf("ping: %d %s", r.Status, r.Body)
	}

	r = callResource(t, d, http.MethodGet, "nope")
	known := make([]string, 0, len(resources))
	for name := range resources {
		known = append(known, name)
	}
	slices.Sort(known)
	if want := `{"error":"unknown resource \"nope\": known resources are ` + strings.Join(known, ", ") + `"}`; r.Status != http.StatusNotFound || string(r.Body) != want ||
		!slices.Contains(known, "ping") || !slices.Contains(known, "setup") {
		t.Errorf("unknown: %d %s", r.Status, r.Body)
	}

	r = callResource(t, d, http.MethodPost, "setup")
	if r.Status != http.StatusMethodNotAllowed || string(r.Body) != `{"error":"resource setup accepts GET, not POST"}` || r.Headers["Allow"][0] != "GET" {
		t.Errorf("POST setup: %d %s %v", r.Status, r.Body, r.Headers)
	}

	// With broken settings, setup still answers and names the problem.
	bad := newTestDS(t, instanceSettings(t, "", nil, nil))
	r = callResource(t, bad, http.MethodGet, "setup")
	if err := json.Unmarshal(r.Body, &st); err != nil || st.Prometheus.OK || st.Prometheus.Error != "Prometheus URL is empty: set it in the data source's HTTP section" {
		t.Errorf("setup with empty URL: %s", r.Body)
	}
}
