package prom

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

func TestIdentifyStore(t *testing.T) {
	vmHeader := http.Header{"X-Server-Hostname": {"vm-0"}}
	for _, c := range []struct {
		name string
		e    StoreEvidence
		want Store
	}{
		{"prometheus 2", StoreEvidence{Found: true, Fields: map[string]string{"version": "2.42.0+ds", "revision": "r", "branch": "debian/sid"}}, StorePrometheus},
		{"prometheus 3", StoreEvidence{Found: true, Fields: map[string]string{"version": "3.16.0", "revision": "r", "goVersion": "go1.25"}}, StorePrometheus},
		{"prometheus without a stamped version", StoreEvidence{Found: true, Fields: map[string]string{"version": "", "revision": "", "branch": "", "goVersion": "go1.25"}}, StorePrometheus},
		{"prometheus behind a proxy under /prom", StoreEvidence{Found: true, Fields: map[string]string{"version": "2.42.0"}, Path: "/prom"}, StorePrometheus},
		{"victoriametrics single node", StoreEvidence{Found: true, Fields: map[string]string{}, Header: vmHeader}, StoreVictoria},
		{"victoriametrics without the header", StoreEvidence{Found: true, Fields: map[string]string{}}, StoreVictoria},
		{"victoriametrics claiming a version", StoreEvidence{Found: true, Fields: map[string]string{"version": "2.24.0"}, Header: vmHeader}, StoreVictoria},
		{"victoriametrics cluster path", StoreEvidence{Found: true, Fields: map[string]string{}, Path: "/select/0/prometheus"}, StoreVictoria},
		{"victoriametrics cluster path, no buildinfo", StoreEvidence{Path: "/select/7:3/prometheus/"}, StoreVictoria},
		{"mimir by application", StoreEvidence{Found: true, Fields: map[string]string{"application": "Grafana Mimir", "version": "2.14.0"}, Path: "/prometheus"}, StoreMimir},
		{"cortex by path", StoreEvidence{Path: "/prometheus"}, StoreMimir},
		{"cortex by path with a version", StoreEvidence{Found: true, Fields: map[string]string{"version": "1.17.0", "revision": "r"}, Path: "/api/prom/prometheus"}, StoreMimir},
		{"thanos querier", StoreEvidence{Found: true, Fields: map[string]string{"version": "0.37.2", "revision": "r", "branch": "HEAD"}}, StoreThanos},
		{"no buildinfo", StoreEvidence{}, StoreUnknown},
	} {
		if got := IdentifyStore(c.e); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// An answer without a version (an unstamped build, or VictoriaMetrics) is a store, not an error.
func TestBuildInfoWithoutVersion(t *testing.T) {
	for _, c := range []struct {
		body   string
		header string
		want   Store
	}{
		{`{"status":"success","data":{"version":"","revision":"","branch":"","buildUser":"","buildDate":"","goVersion":"go1.25.1"}}`, "", StorePrometheus},
		{`{"status":"success","data":{}}`, "vm", StoreVictoria},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/v1/status/buildinfo" {
				http.NotFound(w, r)
				return
			}
			if c.header != "" {
				w.Header().Set("X-Server-Hostname", c.header)
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, c.body)
		}))
		cl, err := New(srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		bi, err := cl.BuildInfo(context.Background())
		srv.Close()
		if err != nil || bi.Version != "" || bi.Store != c.want {
			t.Errorf("%s: %+v %v, want store %s", c.body, bi, err, c.want)
		}
	}
}

func TestBuildInfoOnVictoriaMetrics(t *testing.T) {
	vm := promtest.StartVictoria(t, promtest.VictoriaOptions{})
	c, err := New(vm.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	bi, err := c.BuildInfo(context.Background())
	if err != nil || bi.Store != StoreVictoria {
		t.Fatalf("%+v %v", bi, err)
	}
}
