//go:build cgo

package datasource

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope/pkg/plugintest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/probetest"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// startMockProbe serves a real probe over the scenario's mock GPUs of instance's node, frozen at now.
func startMockProbe(t *testing.T, s *testbed.Scenario, instance string, now time.Time) string {
	return probetest.Start(t, s, instance, now)
}

// TestGPULiveProtocol reads two mock probes and an unreachable one through the plugin over
// gRPC: one table with the 16 GPUs that answered, their readings equal to the scenario's
// truth, and a notice naming the probe that did not.
func TestGPULiveProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the plugin executable")
	}
	s := testbed.Default(testbed.DefaultEnd)
	slow, _ := s.Incident(testbed.ComputeSlowdown)
	now := slow.Start.Add(10 * time.Minute)
	urls := []string{startMockProbe(t, s, "node-a:8000", now), promtest.ClosedURL(t), startMockProbe(t, s, "node-b:8000", now)}
	p := plugintest.Start(t, plugintest.Binary(t, protocolVersion))
	// Prometheus is not asked for a live snapshot: its URL may point nowhere.
	pc := plugintest.PluginContext(PluginID, instanceSettings(t, promtest.ClosedURL(t), map[string]any{"probeUrls": urls}, nil))
	resp, err := p.QueryData(context.Background(), pc, dataQuery("A", now.Add(-time.Hour), now, time.Minute,
		map[string]any{"refId": "A", "queryType": "gpu_live"}))
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Responses["A"]
	if r.Error != nil || len(r.Frames) != 1 {
		t.Fatalf("gpu_live: %v, %d frames", r.Error, len(r.Frames))
	}
	f := r.Frames[0]
	if f.Meta == nil || f.Meta.Type != data.FrameTypeTable || f.Rows() != 16 {
		t.Fatalf("gpu_live: meta %+v, %d rows", f.Meta, f.Rows())
	}
	if len(f.Meta.Notices) != 1 || !strings.Contains(f.Meta.Notices[0].Text, "probe "+urls[1]+": connection refused") {
		t.Errorf("notices %+v", f.Meta.Notices)
	}
	field := func(name string) *data.Field {
		fd, _ := f.FieldByName(name)
		if fd == nil {
			t.Fatalf("no field %q", name)
		}
		return fd
	}
	node, idx, mem, state := field("node"), field("gpu"), field("memory used %"), field("state")
	if u := mem.Config; u == nil || u.Unit != "percentunit" {
		t.Errorf("memory unit %+v", u)
	}
	for i := 0; i < f.Rows(); i++ {
		n := node.At(i).(string)
		g, _ := idx.ConcreteAt(i)
		m, _ := mem.ConcreteAt(i)
		gi := int(g.(float64))
		truth := s.GPU(n+":8000", gi, now).MemUsedRatio
		if state.At(i).(string) != "up" || math.Abs(m.(float64)-truth) > 1e-9 {
			t.Errorf("%s GPU %d: state %v memory %v, truth %.6f", n, gi, state.At(i), m, truth)
		}
		if n == "node-b" && gi < 4 && m.(float64) <= 0.92 {
			t.Errorf("node-b GPU %d: memory %v during the slowdown, want > 92 %%", gi, m)
		}
	}
}
