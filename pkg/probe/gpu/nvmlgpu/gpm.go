package nvmlgpu

import (
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/inferscope/inferscope/pkg/probe/gpu"
)

// gpmState is one device's GPU-performance-monitor sampling: the sample of the previous call,
// and whether the device supports GPM at all (asked once).
type gpmState struct {
	mu        sync.Mutex
	mig       bool // a MIG device: its GPM samples need the GPU instance (not read)
	asked     bool
	supported bool
	prev      nvml.GpmSample
}

// gpmMetrics are the GPM metrics the probe reads, in percent, and where each goes.
var gpmMetrics = []struct {
	id  nvml.GpmMetricId
	set func(*gpu.Activity, *float64)
}{
	{nvml.GPM_METRIC_GRAPHICS_UTIL, func(a *gpu.Activity, v *float64) { a.GraphicsEngine = v }},
	{nvml.GPM_METRIC_ANY_TENSOR_UTIL, func(a *gpu.Activity, v *float64) { a.Tensor = v }},
	{nvml.GPM_METRIC_DRAM_BW_UTIL, func(a *gpu.Activity, v *float64) { a.DRAM = v }},
}

// Activity takes a GPM sample and compares it with the previous call's. GPM exists on Hopper
// and later; elsewhere the answer is ErrNotSupported, asked once and remembered.
func (d *device) Activity() (gpu.Activity, error) {
	for _, g := range [][]string{symGPMSupport, symGPMAlloc, symGPMSample, symGPMMetrics, symGPMFree} {
		if err := d.l.guard(g); err != nil {
			return gpu.Activity{}, err
		}
	}
	st := &d.gpm
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := d.gpmSupported(); err != nil {
		return gpu.Activity{}, err
	}
	cur, ret := d.l.lib.GpmSampleAlloc()
	if err := result(symGPMAlloc, ret); err != nil {
		return gpu.Activity{}, err
	}
	if err := result(symGPMSample, d.h.GpmSampleGet(cur)); err != nil {
		d.l.lib.GpmSampleFree(cur)
		return gpu.Activity{}, err
	}
	prev := st.prev
	st.prev = cur
	if prev == nil {
		return gpu.Activity{}, &gpu.CallError{Func: symGPMMetrics[0], Err: gpu.ErrFirstSample}
	}
	defer d.l.lib.GpmSampleFree(prev)
	get := nvml.GpmMetricsGetType{NumMetrics: uint32(len(gpmMetrics)), Sample1: prev, Sample2: cur}
	for i, m := range gpmMetrics {
		get.Metrics[i].MetricId = uint32(m.id)
	}
	if err := result(symGPMMetrics, d.l.lib.GpmMetricsGet(&get)); err != nil {
		return gpu.Activity{}, err
	}
	var a gpu.Activity
	for i, m := range gpmMetrics {
		// Each metric carries its own return code: one the GPU lacks is left out, not zero.
		if got := get.Metrics[i]; nvml.Return(got.NvmlReturn) == nvml.SUCCESS {
			v := min(max(got.Value/100, 0), 1)
			m.set(&a, &v)
		}
	}
	return a, nil
}

func (d *device) gpmSupported() error {
	st := &d.gpm
	if !st.asked && !st.mig {
		s, ret := d.h.GpmQueryDeviceSupport()
		if err := result(symGPMSupport, ret); err != nil && !gpu.Absent(err) {
			return err // lost or failing: ask again next time
		}
		st.asked, st.supported = true, ret == nvml.SUCCESS && s.IsSupportedDevice != 0
	}
	if !st.supported {
		return &gpu.CallError{Func: symGPMSupport[0], Err: gpu.ErrNotSupported}
	}
	return nil
}
