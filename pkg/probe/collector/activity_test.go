package collector_test

import (
	"math"
	"testing"

	"github.com/inferscope/inferscope/pkg/probe/mockgpu"
)

// The GPU performance monitor needs two samples: the first cycle has no activity (not measured,
// never 0), every later one the activity between its sample and the previous cycle's.
func TestActivityFromTheGPUPerformanceMonitor(t *testing.T) {
	sys := newSystem(t, mockgpu.Options{System: mockgpu.DGXH100})
	c := start(t, sys)
	if g := c.Snapshot().GPUs[3]; g.EngineActiveRatio != nil || g.DRAMActiveRatio != nil || g.Error != "" {
		t.Fatalf("first cycle: engine %v dram %v error %q; want not measured, no error", g.EngineActiveRatio, g.DRAMActiveRatio, g.Error)
	}
	s := c.CollectNow()
	for i, g := range s.GPUs {
		want := truth(i)
		if g.EngineActiveRatio == nil || math.Abs(*g.EngineActiveRatio-want.UtilRatio) > 1e-9 {
			t.Errorf("gpu %d: engine active %v; want %v", i, g.EngineActiveRatio, want.UtilRatio)
		}
		if g.DRAMActiveRatio == nil || math.Abs(*g.DRAMActiveRatio-want.MemBandwidthRatio) > 1e-9 {
			t.Errorf("gpu %d: dram active %v; want %v", i, g.DRAMActiveRatio, want.MemBandwidthRatio)
		}
		// The mock's GPUs do not report the tensor metric: left out, not 0.
		if g.TensorActiveRatio != nil {
			t.Errorf("gpu %d: tensor active %v; want nil (the metric answered NOT_SUPPORTED)", i, *g.TensorActiveRatio)
		}
	}
	// A lost GPU is lost, not idle.
	sys.SetLost(5, true)
	if g := c.CollectNow().GPUs[5]; g.State != "lost" || g.EngineActiveRatio != nil {
		t.Errorf("lost gpu: state %q engine %v", g.State, g.EngineActiveRatio)
	}
}

// GPUs before Hopper have no performance monitor: the readings are absent, with no error.
func TestNoActivityWithoutTheGPUPerformanceMonitor(t *testing.T) {
	c := start(t, newSystem(t, mockgpu.Options{System: mockgpu.DGXA100}))
	for range 2 {
		for i, g := range c.CollectNow().GPUs {
			if g.EngineActiveRatio != nil || g.TensorActiveRatio != nil || g.DRAMActiveRatio != nil || g.Error != "" {
				t.Errorf("gpu %d: engine %v tensor %v dram %v error %q; want none", i, g.EngineActiveRatio, g.TensorActiveRatio, g.DRAMActiveRatio, g.Error)
			}
		}
	}
}
