//go:build cgo

package datasource

import (
	"context"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/plugintest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// TestGoldenFramesGPULive reads two mock probes whose clocks are frozen inside the compute
// slowdown, and one that is unreachable, through the built plugin over gRPC, and compares the
// table with testdata/golden/gpu_live.json. The probes' loopback URLs change run to run and are
// written as placeholders.
func TestGoldenFramesGPULive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the plugin executable")
	}
	s := testbed.Default(testbed.DefaultEnd)
	slow, _ := s.Incident(testbed.ComputeSlowdown)
	now := slow.Start.Add(10 * time.Minute)
	a, down, b := startMockProbe(t, s, "node-a:8000", now), promtest.ClosedURL(t), startMockProbe(t, s, "node-b:8000", now)
	p := plugintest.Start(t, plugintest.Binary(t, protocolVersion))
	// Prometheus is not asked for a live snapshot: its URL may point nowhere.
	pc := plugintest.PluginContext(PluginID, instanceSettings(t, promtest.ClosedURL(t), map[string]any{"probeUrls": []string{a, down, b}}, nil))
	gq := goldenQuery{name: "gpu_live", from: now.Add(-time.Hour), to: now, step: time.Minute,
		model: map[string]any{"refId": "A", "queryType": "gpu_live", "gpu": "0|1|6"}}
	resp, err := p.QueryData(context.Background(), pc, dataQuery("A", gq.from, gq.to, gq.step, gq.model))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, gq, resp.Responses["A"], map[string]string{a: "PROBE_A", b: "PROBE_B", down: "PROBE_DOWN"})
}
