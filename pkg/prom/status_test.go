package prom

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestRetentionFrom(t *testing.T) {
	for _, tc := range []struct {
		flags map[string]string
		want  time.Duration
		known bool
	}{
		{map[string]string{"storage.tsdb.retention.time": "30d"}, 30 * 24 * time.Hour, true},
		{map[string]string{"storage.tsdb.retention.time": "0s", "storage.tsdb.retention.size": "0B"}, 15 * 24 * time.Hour, true},
		{map[string]string{"storage.tsdb.retention.time": "0s", "storage.tsdb.retention": "10d"}, 10 * 24 * time.Hour, true},
		{map[string]string{"storage.tsdb.retention.time": "0s", "storage.tsdb.retention.size": "50GB"}, 0, true},
		{map[string]string{"query.timeout": "2m"}, 0, false}, // a Thanos querier's flags
		{map[string]string{"storage.tsdb.retention.time": "soon"}, 0, false},
	} {
		d, known, why := retentionFrom(tc.flags)
		if d != tc.want || known != tc.known {
			t.Errorf("%v: %s %v (%s), want %s %v", tc.flags, d, known, why, tc.want, tc.known)
		}
	}
}

func TestIntervalsFrom(t *testing.T) {
	global, jobs, err := intervalsFrom("global:\n  scrape_interval: 30s\nscrape_configs:\n- job_name: a\n- job_name: b\n  scrape_interval: 5s\n")
	if err != nil || global != 30*time.Second || jobs["a"] != 30*time.Second || jobs["b"] != 5*time.Second {
		t.Errorf("%s %v %v", global, jobs, err)
	}
	if global, _, _ := intervalsFrom("scrape_configs: []\n"); global != time.Minute {
		t.Errorf("default global %s, want Prometheus' 1m", global)
	}
	if _, _, err := intervalsFrom("global: [\n"); err == nil {
		t.Error("broken YAML accepted")
	}
}

// A store without the status endpoints (VictoriaMetrics answers 404 or 400 there) is a set-up
// that cannot be checked, not a failure.
func TestSetupOfAStoreWithoutStatusAPI(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	c, _ := New(srv.URL, nil)
	s, err := c.Setup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.RetentionKnown || s.IntervalsKnown || s.RetentionWhy == "" || s.IntervalsWhy == "" {
		t.Errorf("%+v", s)
	}
	c, _ = New("http://127.0.0.1:1", nil)
	if _, err := c.Setup(context.Background()); KindOf(err) != KindUnreachable {
		t.Errorf("an unreachable store: %v", err)
	}
}
