package setup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/setup"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// A real Prometheus scraping the GPU job every minute and keeping 7 days: both checks warn, with
// the fix, and the baseline's lost day is named; the fast job is not blamed.
func TestChecksOnARealPrometheus(t *testing.T) {
	srv := promtest.Start(t, promtest.Options{
		Retention: "7d",
		ConfigYAML: "global:\n  scrape_interval: 1m\nscrape_configs:\n" +
			"- job_name: inference\n  scrape_interval: 15s\n  static_configs: [{targets: ['127.0.0.1:1']}]\n" +
			"- job_name: gpu\n  static_configs: [{targets: ['127.0.0.1:2']}]\n",
	})
	c, err := prom.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Setup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !s.RetentionKnown || s.Retention != 7*24*time.Hour || s.Jobs["gpu"] != time.Minute || s.Jobs["inference"] != 15*time.Second {
		t.Fatalf("read %+v", s)
	}
	findings := setup.Check(setup.Store{Retention: s.Retention, RetentionKnown: s.RetentionKnown, Jobs: s.Jobs, IntervalsKnown: s.IntervalsKnown},
		[]string{"inference", "gpu"})
	got := map[string]setup.Finding{}
	for _, f := range findings {
		got[f.Check] = f
	}
	if f := got["scrape interval"]; f.Level != setup.Warn || !strings.Contains(f.Message, "gpu every 1m0s") || strings.Contains(f.Message, "inference every") {
		t.Errorf("scrape interval: %+v", f)
	}
	if f := got["retention"]; f.Level != setup.Warn || !strings.Contains(f.Message, "at most 6") || !strings.Contains(f.Fix, "retention.time=30d") {
		t.Errorf("retention: %+v", f)
	}
}
