package promexport

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The performance monitor's readings carry our names, or the profiling fields' names of each
// dcgm-exporter version (so the data source reads them the same either way); a reading the GPU
// did not give (tensor here) is left out in every naming.
func TestActivityNames(t *testing.T) {
	for _, tc := range []struct {
		naming       Naming
		engine, dram string
	}{
		{NamingInferscope, "inferscope_gpu_graphics_engine_active_ratio", "inferscope_gpu_dram_active_ratio"},
		{NamingDCGM, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"},
		{NamingDCGM49, "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", "DCGM_FI_PROF_DRAM_UTIL_RATIO"},
	} {
		s := sample()
		s.GPUs[0].EngineActiveRatio, s.GPUs[0].DRAMActiveRatio = p(0.75), p(0.5)
		g, err := NewGatherer(fixed{s}, Options{Naming: tc.naming, Now: func() time.Time { return collectedAt }}, prometheus.NewPedanticRegistry())
		if err != nil {
			t.Fatal(err)
		}
		mfs, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				got[mf.GetName()] += m.GetGauge().GetValue()
			}
			if strings.Contains(strings.ToLower(mf.GetName()), "tensor") {
				t.Errorf("%s: %s written without a reading", tc.naming, mf.GetName())
			}
		}
		if got[tc.engine] != 0.75 || got[tc.dram] != 0.5 {
			t.Errorf("%s: %s = %v, %s = %v; want 0.75 and 0.5", tc.naming, tc.engine, got[tc.engine], tc.dram, got[tc.dram])
		}
		if n, err := testutil.GatherAndCount(g, tc.engine); err != nil || n != 1 {
			t.Errorf("%s: %d series of %s (%v); want 1 (GPU 0 only)", tc.naming, n, tc.engine, err)
		}
	}
}
