package mockgpu

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// The GPU performance monitor exists on Hopper: the DGX H100 mock has it, the DGX A100 mock
// answers that its GPUs do not. A sample holds the GPU's state when it was taken; the metrics
// between two samples are the later sample's graphics-engine activity (the scenario's
// utilisation) and DRAM bandwidth. The scenario has no truth for the tensor pipes, so that
// metric answers NOT_SUPPORTED, as a metric a GPU lacks does.

type gpmSample struct {
	st    State
	taken bool
}

func (g *gpmSample) Free() nvml.Return                   { return nvml.SUCCESS }
func (g *gpmSample) Get(nvml.Device) nvml.Return         { return nvml.ERROR_NOT_SUPPORTED }
func (g *gpmSample) MigGet(nvml.Device, int) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }

func (s *System) fillGPM(i int, d *server.Device) {
	d.GpmQueryDeviceSupportFunc = func() (nvml.GpmSupport, nvml.Return) {
		if _, l := s.state(i); l {
			return nvml.GpmSupport{}, lost
		}
		var supported uint32
		if s.opts.System == DGXH100 {
			supported = 1
		}
		return nvml.GpmSupport{Version: nvml.GPM_SUPPORT_VERSION, IsSupportedDevice: supported}, nvml.SUCCESS
	}
	d.GpmSampleGetFunc = func(sample nvml.GpmSample) nvml.Return {
		st, l := s.state(i)
		if l {
			return lost
		}
		g, ok := sample.(*gpmSample)
		if !ok {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		g.st, g.taken = st, true
		return nvml.SUCCESS
	}
}

func (v *view) GpmSampleAlloc() (nvml.GpmSample, nvml.Return) { return &gpmSample{}, nvml.SUCCESS }
func (v *view) GpmSampleFree(nvml.GpmSample) nvml.Return      { return nvml.SUCCESS }

func (v *view) GpmMetricsGet(get *nvml.GpmMetricsGetType) nvml.Return {
	first, ok1 := get.Sample1.(*gpmSample)
	second, ok2 := get.Sample2.(*gpmSample)
	if !ok1 || !ok2 || !first.taken || !second.taken || int(get.NumMetrics) > len(get.Metrics) {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	for i := range get.NumMetrics {
		m := &get.Metrics[i]
		m.NvmlReturn = uint32(nvml.SUCCESS)
		switch nvml.GpmMetricId(m.MetricId) {
		case nvml.GPM_METRIC_GRAPHICS_UTIL:
			m.Value = 100 * clamp01(second.st.UtilRatio)
		case nvml.GPM_METRIC_DRAM_BW_UTIL:
			m.Value = 100 * clamp01(second.st.MemBandwidthRatio)
		default:
			m.NvmlReturn, m.Value = uint32(nvml.ERROR_NOT_SUPPORTED), 0
		}
	}
	return nvml.SUCCESS
}

func (h *handle) GpmQueryDeviceSupport() (nvml.GpmSupport, nvml.Return) {
	if f := h.d.GpmQueryDeviceSupportFunc; f != nil {
		return f()
	}
	return nvml.GpmSupport{}, unsupported
}

func (h *handle) GpmSampleGet(sample nvml.GpmSample) nvml.Return {
	if f := h.d.GpmSampleGetFunc; f != nil {
		return f(sample)
	}
	return unsupported
}
