package mockgpu

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// view is the probe's entry point into the mock server: the calls the probe makes go straight
// to the Func fields, bypassing moq's call recording. A Func left nil answers NOT_SUPPORTED,
// as a driver without the feature would. Anything else falls through to the mock.
type view struct {
	nvml.Interface
	sys *System
}

func (v *view) Extensions() nvml.ExtendedInterface { return v }
func (v *view) LookupSymbol(string) error          { return nil }
func (v *view) Init() nvml.Return                  { return nvml.SUCCESS }
func (v *view) Shutdown() nvml.Return              { return nvml.SUCCESS }

func (v *view) SystemGetDriverVersion() (string, nvml.Return) {
	return v.sys.Server.DriverVersion, nvml.SUCCESS
}

func (v *view) SystemGetCudaDriverVersion() (int, nvml.Return) {
	return v.sys.Server.CudaDriverVersion, nvml.SUCCESS
}

func (v *view) DeviceGetCount() (int, nvml.Return) { return v.sys.GPUs(), nvml.SUCCESS }

func (v *view) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	if i < 0 || i >= v.sys.GPUs() {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return v.sys.handles()[i], nvml.SUCCESS
}

func (v *view) SystemGetProcessName(pid int) (string, nvml.Return) {
	if f := v.sys.Server.SystemGetProcessNameFunc; f != nil {
		return f(pid)
	}
	return "", nvml.ERROR_NOT_SUPPORTED
}

func (v *view) EventSetCreate() (nvml.EventSet, nvml.Return) {
	if f := v.sys.Server.EventSetCreateFunc; f != nil {
		return f()
	}
	return nil, nvml.ERROR_NOT_SUPPORTED
}

// handle wraps one mock device.
type handle struct {
	nvml.Device
	d   *server.Device
	sys *System
}

func (s *System) handles() []*handle {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrapped == nil {
		for _, d := range s.Server.Devices {
			md := d.(*server.Device)
			s.wrapped = append(s.wrapped, &handle{Device: md, d: md, sys: s})
		}
	}
	return s.wrapped
}

const unsupported = nvml.ERROR_NOT_SUPPORTED

func (h *handle) GetUUID() (string, nvml.Return) {
	if f := h.d.GetUUIDFunc; f != nil {
		return f()
	}
	return "", unsupported
}

func (h *handle) GetName() (string, nvml.Return) {
	if f := h.d.GetNameFunc; f != nil {
		return f()
	}
	return "", unsupported
}

func (h *handle) GetMinorNumber() (int, nvml.Return) {
	if f := h.d.GetMinorNumberFunc; f != nil {
		return f()
	}
	return 0, unsupported
}

func (h *handle) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	if f := h.d.GetUtilizationRatesFunc; f != nil {
		return f()
	}
	return nvml.Utilization{}, unsupported
}

func (h *handle) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	if f := h.d.GetMemoryInfoFunc; f != nil {
		return f()
	}
	return nvml.Memory{}, unsupported
}

func (h *handle) GetMemoryInfo_v2() (nvml.Memory_v2, nvml.Return) {
	if f := h.d.GetMemoryInfo_v2Func; f != nil {
		return f()
	}
	return nvml.Memory_v2{}, unsupported
}

func (h *handle) GetTemperature(s nvml.TemperatureSensors) (uint32, nvml.Return) {
	if f := h.d.GetTemperatureFunc; f != nil {
		return f(s)
	}
	return 0, unsupported
}

func (h *handle) GetPowerUsage() (uint32, nvml.Return) {
	if f := h.d.GetPowerUsageFunc; f != nil {
		return f()
	}
	return 0, unsupported
}

func (h *handle) GetEnforcedPowerLimit() (uint32, nvml.Return) {
	if f := h.d.GetEnforcedPowerLimitFunc; f != nil {
		return f()
	}
	return 0, unsupported
}

func (h *handle) GetClockInfo(t nvml.ClockType) (uint32, nvml.Return) {
	if f := h.d.GetClockInfoFunc; f != nil {
		return f(t)
	}
	return 0, unsupported
}

func (h *handle) GetCurrentClocksEventReasons() (uint64, nvml.Return) {
	if f := h.d.GetCurrentClocksEventReasonsFunc; f != nil {
		return f()
	}
	return 0, unsupported
}

func (h *handle) GetCurrentClocksThrottleReasons() (uint64, nvml.Return) {
	if f := h.d.GetCurrentClocksThrottleReasonsFunc; f != nil {
		return f()
	}
	return 0, unsupported
}

func (h *handle) GetPcieThroughput(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
	if f := h.d.GetPcieThroughputFunc; f != nil {
		return f(c)
	}
	return 0, unsupported
}

func (h *handle) GetPcieReplayCounter() (int, nvml.Return) {
	if f := h.d.GetPcieReplayCounterFunc; f != nil {
		return f()
	}
	return 0, unsupported
}

func (h *handle) GetTotalEccErrors(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
	if f := h.d.GetTotalEccErrorsFunc; f != nil {
		return f(t, c)
	}
	return 0, unsupported
}

func (h *handle) GetRetiredPages(c nvml.PageRetirementCause) ([]uint64, nvml.Return) {
	if f := h.d.GetRetiredPagesFunc; f != nil {
		return f(c)
	}
	return nil, unsupported
}

func (h *handle) GetRetiredPagesPendingStatus() (nvml.EnableState, nvml.Return) {
	if f := h.d.GetRetiredPagesPendingStatusFunc; f != nil {
		return f()
	}
	return 0, unsupported
}

func (h *handle) GetRemappedRows() (int, int, bool, bool, nvml.Return) {
	if f := h.d.GetRemappedRowsFunc; f != nil {
		return f()
	}
	return 0, 0, false, false, unsupported
}

func (h *handle) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	if f := h.d.GetComputeRunningProcessesFunc; f != nil {
		return f()
	}
	return nil, unsupported
}

func (h *handle) GetMigMode() (int, int, nvml.Return) {
	if f := h.d.GetMigModeFunc; f != nil {
		return f()
	}
	return 0, 0, unsupported
}

func (h *handle) GetMaxMigDeviceCount() (int, nvml.Return) {
	if f := h.d.GetMaxMigDeviceCountFunc; f != nil {
		return f()
	}
	return 0, unsupported
}

func (h *handle) GetMigDeviceHandleByIndex(i int) (nvml.Device, nvml.Return) {
	if f := h.d.GetMigDeviceHandleByIndexFunc; f != nil {
		return f(i)
	}
	return nil, unsupported
}

func (h *handle) GetSupportedEventTypes() (uint64, nvml.Return) {
	if f := h.d.GetSupportedEventTypesFunc; f != nil {
		return f()
	}
	return 0, unsupported
}

// RegisterEvents registers this handle with a simulated event set, so events carry the same
// handle the probe holds.
func (h *handle) RegisterEvents(types uint64, set nvml.EventSet) nvml.Return {
	target, ok := set.(*eventSet)
	if !ok {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	if types&nvml.EventTypeXidCriticalError == 0 {
		return nvml.SUCCESS
	}
	for i, w := range h.sys.handles() {
		if w == h {
			target.mu.Lock()
			target.devices[i] = h
			target.mu.Unlock()
		}
	}
	return nvml.SUCCESS
}
