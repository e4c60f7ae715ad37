//go:build cgo

// Package probetest serves real probes (collector, exporter, HTTP server) over mock GPUs that
// play the test bed's scenario, for tests of the code that reads probes.
package probetest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/probe"
	"github.com/inferscope/inferscope/pkg/probe/gpu"
	"github.com/inferscope/inferscope/pkg/probe/gpu/nvmlgpu"
	"github.com/inferscope/inferscope/pkg/probe/mockgpu"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/gpuclock"
)

// Start serves on loopback a probe whose NVML is a DGX A100 mock playing the node of the
// scenario's instance, frozen at now, and returns its base URL. It stops with the test.
func Start(t testing.TB, s *testbed.Scenario, instance string, now time.Time) string {
	t.Helper()
	clock := func() time.Time { return now }
	sys, err := mockgpu.New(mockgpu.Options{System: mockgpu.DGXA100, Clock: gpuclock.FromScenario(s, mockgpu.DGXA100), Instance: instance, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	p, err := probe.New(probe.Config{
		Open:     func() (gpu.Library, error) { return nvmlgpu.Open(sys) },
		Interval: time.Hour, Hostname: testbed.Node(instance), Version: "test",
		Owners: mockgpu.Owners{Instance: instance}, Now: clock, NoRuntimeMetrics: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(func() {
		srv.Close()
		p.Close()
	})
	return srv.URL
}
