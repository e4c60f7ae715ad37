package datasource

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// TestGPUTypesProtocol runs the GPU query types through the built plugin over gRPC against a
// real Prometheus on the test bed's history, checking the frames' shape (typed wide frames,
// units, thresholds, labels) and their numbers against the scenario's truth.
func TestGPUTypesProtocol(t *testing.T) {
	down := promtest.ClosedURL(t)
	p, pc, s := startPluginOnBed(t, map[string]any{"probeUrls": []string{down}})
	ctx := context.Background()

	slow, _ := s.Incident(testbed.ComputeSlowdown)
	idle, _ := s.Incident(testbed.GPUIdle)
	queries := []backend.DataQuery{
		dataQuery("mem", slow.Start, slow.End, time.Minute, map[string]any{"refId": "mem", "queryType": "gpu",
			"instance": "node-b:8000", "gpu": "0|1|2|3", "metrics": []string{"memory"}}),
		dataQuery("eta", slow.Start.Add(-45*time.Minute), slow.Start.Add(-15*time.Minute), time.Minute, map[string]any{"refId": "eta",
			"queryType": "gpumem_forecast", "instance": "node-b", "gpu": "0", "series": []string{"eta"}}),
		dataQuery("idle", idle.Start.Add(-20*time.Minute), idle.End.Add(20*time.Minute), time.Minute, map[string]any{"refId": "idle",
			"queryType": "gpu_idle_under_traffic", "instance": idle.Instance, "gpu": "6", "series": "idle_under_traffic"}),
		dataQuery("live", slow.Start, slow.End, time.Minute, map[string]any{"refId": "live", "queryType": "gpu_live"}),
		dataQuery("bad", slow.Start, slow.End, time.Minute, map[string]any{"refId": "bad", "queryType": "gpu", "metrics": "fan"}),
	}
	resp, err := p.QueryData(ctx, pc, queries...)
	if err != nil {
		t.Fatal(err)
	}

	// gpu: four typed frames, memory in percentunit with the 85 % / 92 % steps, > 92 % and equal
	// to the truth during the compute slowdown.
	mem := resp.Responses["mem"]
	if mem.Error != nil || len(mem.Frames) != 4 {
		t.Fatalf("gpu: %v, %d frames", mem.Error, len(mem.Frames))
	}
	for _, f := range mem.Frames {
		checkTimeSeriesFrame(t, f)
		v := f.Fields[1]
		gpu := v.Labels["gpu"]
		if v.Labels["node"] != "node-b" || v.Labels["series"] != "memory" || v.Config.Unit != "percentunit" {
			t.Errorf("gpu frame labels %v unit %q", v.Labels, v.Config.Unit)
		}
		th := v.Config.Thresholds
		if th == nil || len(th.Steps) != 3 || th.Steps[1].Value != 0.85 || th.Steps[2].Value != 0.92 {
			t.Errorf("memory thresholds %+v", th)
		}
		if !strings.Contains(v.Config.DisplayNameFromDS, "node-b GPU "+gpu) {
			t.Errorf("display name %q", v.Config.DisplayNameFromDS)
		}
		g := int(gpu[0] - '0')
		for i := 0; i < f.Rows(); i++ {
			at := f.Fields[0].At(i).(time.Time)
			got, _ := v.ConcreteAt(i)
			truth := s.GPU("node-b:8000", g, at).MemUsedRatio
			if x, ok := got.(float64); !ok || math.Abs(x-truth) > 1e-9 || (x <= 0.92 && at.Before(slow.End)) {
				t.Errorf("GPU %d at %s: memory %v, truth %.6f (> 92 %%)", g, at.Format(time.RFC3339), got, truth)
			}
		}
	}

	// gpumem_forecast, only the eta series: the time left until the slowdown starts.
	eta := resp.Responses["eta"]
	if eta.Error != nil || len(eta.Frames) != 1 {
		t.Fatalf("gpumem_forecast: %v, %d frames", eta.Error, len(eta.Frames))
	}
	f := eta.Frames[0]
	checkTimeSeriesFrame(t, f)
	if f.Fields[1].Config.Unit != "s" {
		t.Errorf("eta unit %q", f.Fields[1].Config.Unit)
	}
	for i := 0; i < f.Rows(); i++ {
		at := f.Fields[0].At(i).(time.Time)
		got, _ := f.Fields[1].ConcreteAt(i)
		if x, ok := got.(float64); !ok || math.Abs(x-slow.Start.Sub(at).Seconds()) > 30 {
			t.Errorf("eta at %s: %v s, truth %.0f s", at.Format(time.RFC3339), got, slow.Start.Sub(at).Seconds())
		}
	}

	// gpu_idle_under_traffic: 1 from 10 minutes into the incident until its end, else 0.
	idleResp := resp.Responses["idle"]
	if idleResp.Error != nil || len(idleResp.Frames) != 1 {
		t.Fatalf("gpu_idle_under_traffic: %v, %d frames", idleResp.Error, len(idleResp.Frames))
	}
	f = idleResp.Frames[0]
	checkTimeSeriesFrame(t, f)
	if m := f.Fields[1].Config.Mappings; len(m) != 1 {
		t.Errorf("value mappings %v", m)
	}
	ones := 0
	for i := 0; i < f.Rows(); i++ {
		at := f.Fields[0].At(i).(time.Time)
		got, _ := f.Fields[1].ConcreteAt(i)
		want := 0.0
		if !at.Before(idle.Start.Add(10*time.Minute)) && at.Before(idle.End) {
			want = 1
			ones++
		}
		if got != want {
			t.Errorf("idle at %s: %v, want %v", at.Format(time.RFC3339), got, want)
		}
	}
	if ones == 0 {
		t.Error("no point inside the incident")
	}

	// gpu_live with an unreachable probe: an empty table and a notice naming the probe.
	live := resp.Responses["live"]
	if live.Error != nil || len(live.Frames) != 1 {
		t.Fatalf("gpu_live: %v, %d frames", live.Error, len(live.Frames))
	}
	f = live.Frames[0]
	if f.Meta == nil || f.Meta.Type != data.FrameTypeTable || f.Rows() != 0 || len(f.Meta.Notices) != 1 ||
		!strings.Contains(f.Meta.Notices[0].Text, "probe "+down+": connection refused") {
		t.Errorf("gpu_live frame meta %+v, %d rows", f.Meta, f.Rows())
	}

	if bad := resp.Responses["bad"]; bad.Error == nil || !strings.Contains(bad.Error.Error(), `"fan"`) || bad.Status != backend.StatusBadRequest {
		t.Errorf("bad metric: %v %v", bad.Status, bad.Error)
	}
	if p.Exited() {
		t.Error("the plugin process exited")
	}
}

func checkTimeSeriesFrame(t *testing.T, f *data.Frame) {
	t.Helper()
	if f.Meta == nil || f.Meta.Type != data.FrameTypeTimeSeriesMulti || f.Meta.TypeVersion != (data.FrameTypeVersion{0, 1}) || len(f.Fields) != 2 {
		t.Errorf("frame %q: meta %+v, %d fields", f.Name, f.Meta, len(f.Fields))
	}
}
