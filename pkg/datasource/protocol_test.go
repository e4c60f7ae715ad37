package datasource

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope/pkg/plugintest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

const protocolVersion = "protocol-test"

// TestProtocol builds the data source executable (or takes it from $INFERSCOPE_DIST), starts it
// the way Grafana does and calls CheckHealth, QueryData and CallResource over gRPC against a
// real Prometheus serving the test bed's week of history, comparing rates with the scenario's
// truth.
func TestProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the plugin executable")
	}
	dir, s := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	p := plugintest.Start(t, plugintest.Binary(t, protocolVersion))
	ctx := context.Background()

	settings := instanceSettings(t, srv.URL, map[string]any{"warmupWindow": "90s"}, nil)
	pc := plugintest.PluginContext(PluginID, settings)

	// Health: OK, the version Prometheus reports, the profile detected from its metric names.
	health, err := p.CheckHealth(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^Prometheus (2\.\d+\.\d+\S*) at ` + regexp.QuoteMeta(srv.URL) + ` is reachable\. metric profile custom detected: custom \(2 models\)$`)
	if health.Status != backend.HealthStatusOk || !want.MatchString(health.Message) {
		t.Errorf("health %v %q", health.Status, health.Message)
	}

	// QueryData: QPS per model every 6 hours over the week, one frame per model.
	end := testbed.DefaultEnd
	from := end.Add(-7 * 24 * time.Hour)
	step := 6 * time.Hour
	good := dataQuery("A", from, end, step, map[string]any{"refId": "A", "queryType": "promql",
		"expr": "sum by (model_name) (rate(inference_requests_total[5m]))", "legendFormat": "{{model_name}}"})
	bad := dataQuery("B", from, end, step, map[string]any{"refId": "B", "queryType": "no_such_type"})
	resp, err := p.QueryData(ctx, pc, good, bad)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Responses["B"]; r.Error == nil || !strings.HasPrefix(r.Error.Error(), `unknown query type "no_such_type": known types are `) ||
		!strings.Contains(r.Error.Error(), "baseline") || !strings.Contains(r.Error.Error(), "promql") {
		t.Errorf("B: %v", r.Error)
	}
	a := resp.Responses["A"]
	if a.Error != nil {
		t.Fatal(a.Error)
	}
	models := s.Models()
	if len(a.Frames) != len(models) {
		t.Fatalf("A: %d frames for %d models", len(a.Frames), len(models))
	}
	const window = 5 * time.Minute
	checked, nearTruth := 0, 0
	for _, f := range a.Frames {
		if f.Meta == nil || f.Meta.Type != data.FrameTypeTimeSeriesMulti || f.Meta.TypeVersion != (data.FrameTypeVersion{0, 1}) {
			t.Errorf("frame meta %+v", f.Meta)
		}
		model := f.Fields[1].Labels["model_name"]
		if f.Fields[1].Config == nil || f.Fields[1].Config.DisplayNameFromDS != model {
			t.Errorf("model %s: display name %+v", model, f.Fields[1].Config)
		}
		if f.Rows() != int(end.Sub(from)/step)+1 {
			t.Errorf("model %s: %d points", model, f.Rows())
		}
		for i := 0; i < f.Rows(); i++ {
			at := f.Fields[0].At(i).(time.Time)
			got := f.Fields[1].At(i).(float64)
			// A restart inside the window resets counters; rate() and the truth part ways there.
			if nearIncident(s, at, window, testbed.WarmupRestart) {
				continue
			}
			// Samples are on the 1-minute grid, so rate() over 5m is exactly the mean over [at-5m, at].
			if mean := s.MeanQPS("", model, "", at.Add(-window), at); math.Abs(got-mean) > 1e-9*mean {
				t.Errorf("model %s at %s: QPS %.9g, exact mean %.9g", model, at.Format(time.RFC3339), got, mean)
			}
			checked++
			// Traffic steps make the 5-minute average lag the instantaneous truth.
			if nearIncident(s, at, window, testbed.QueueSurge) {
				continue
			}
			// Against the instantaneous truth the 5-minute average is within 3 %.
			if truth := s.QPS("", model, "", at); math.Abs(got-truth) > 0.03*truth {
				t.Errorf("model %s at %s: QPS %.4g, truth %.4g", model, at.Format(time.RFC3339), got, truth)
			}
			nearTruth++
		}
	}
	t.Logf("%d points equal the exact mean rate, %d of them are within 3 %% of the instantaneous truth", checked, nearTruth)
	if checked < 2*len(models) || nearTruth < len(models) {
		t.Errorf("too few points checked: %d against the mean, %d against the instantaneous truth", checked, nearTruth)
	}

	// Resources.
	r, err := p.CallResource(ctx, pc, http.MethodGet, "setup")
	if err != nil {
		t.Fatal(err)
	}
	var st SetupStatus
	if err := json.Unmarshal(r.Body, &st); err != nil || r.Status != http.StatusOK {
		t.Fatalf("setup: %d %s: %v", r.Status, r.Body, err)
	}
	if !st.Prometheus.OK || st.Prometheus.URL != srv.URL || st.Profile.Name != "custom" || !st.Profile.Detected || st.WarmupWindow != "1m30s" || st.Probes == nil {
		t.Errorf("setup %s", r.Body)
	}
	r, err = p.CallResource(ctx, pc, http.MethodGet, "ping")
	if err != nil {
		t.Fatal(err)
	}
	var ping map[string]string
	if err := json.Unmarshal(r.Body, &ping); err != nil || ping["status"] != "ok" || ping["plugin"] != PluginID || ping["version"] == "" {
		t.Errorf("ping: %s", r.Body)
	}
	if os.Getenv(plugintest.DistEnv) == "" && ping["version"] != protocolVersion {
		t.Errorf("ping version %q, want the one linked in (%s)", ping["version"], protocolVersion)
	}
	r, err = p.CallResource(ctx, pc, http.MethodGet, "rules/unknown")
	if err != nil || r.Status != http.StatusNotFound {
		t.Errorf("unknown resource: %v %v", r, err)
	}

	// A second instance with broken settings answers ERROR with the reason, not a protocol error.
	broken := instanceSettings(t, "", nil, nil)
	broken.UID = "broken"
	health, err = p.CheckHealth(ctx, plugintest.PluginContext(PluginID, broken))
	if err != nil {
		t.Fatal(err)
	}
	if health.Status != backend.HealthStatusError || health.Message != "Prometheus URL is empty: set it in the data source's HTTP section" {
		t.Errorf("broken settings: %v %q", health.Status, health.Message)
	}
	if p.Exited() {
		t.Error("the plugin process exited")
	}
}

// nearIncident reports whether [at-margin, at+margin] touches an incident of one of the kinds.
func nearIncident(s *testbed.Scenario, at time.Time, margin time.Duration, kinds ...testbed.IncidentKind) bool {
	for _, in := range s.Incidents() {
		if slices.Contains(kinds, in.Kind) && !at.Before(in.Start.Add(-margin)) && !at.After(in.End.Add(margin)) {
			return true
		}
	}
	return false
}
