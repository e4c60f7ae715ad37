// Package nvmlgpu implements gpu.Library over go-nvml with symbol guards.
//
// Calling an NVML function whose symbol the installed libnvidia-ml lacks kills the process
// (recover cannot catch it). So after a successful Init every function the probe may call is
// looked up once, and a call whose symbol is absent returns gpu.ErrSymbolMissing instead of
// reaching C. When Init fails nothing else is called.
//
// The Go method → C symbol table below follows go-nvml v0.13.4-1, which compiles with
// NVML_NO_UNVERSIONED_FUNC_DEFS and picks the newest versioned symbol of a few functions
// itself at load time (listed newest first here: any one of them is enough).
package nvmlgpu

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/inferscope/inferscope/pkg/probe/gpu"
)

// C symbol names, one constant per Go method the probe calls.
var (
	symDriverVersion     = []string{"nvmlSystemGetDriverVersion"}
	symCUDAVersion       = []string{"nvmlSystemGetCudaDriverVersion"}
	symDeviceCount       = []string{"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}
	symHandleByIndex     = []string{"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}
	symProcessName       = []string{"nvmlSystemGetProcessName"}
	symShutdown          = []string{"nvmlShutdown"}
	symEventSetCreate    = []string{"nvmlEventSetCreate"}
	symEventSetWait      = []string{"nvmlEventSetWait_v2", "nvmlEventSetWait"}
	symEventSetFree      = []string{"nvmlEventSetFree"}
	symRegisterEvents    = []string{"nvmlDeviceRegisterEvents"}
	symSupportedEvents   = []string{"nvmlDeviceGetSupportedEventTypes"}
	symUUID              = []string{"nvmlDeviceGetUUID"}
	symName              = []string{"nvmlDeviceGetName"}
	symMinor             = []string{"nvmlDeviceGetMinorNumber"}
	symPCIInfo           = []string{"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"}
	symUtilization       = []string{"nvmlDeviceGetUtilizationRates"}
	symMemoryV2          = []string{"nvmlDeviceGetMemoryInfo_v2"}
	symMemoryV1          = []string{"nvmlDeviceGetMemoryInfo"}
	symTemperature       = []string{"nvmlDeviceGetTemperature"}
	symPower             = []string{"nvmlDeviceGetPowerUsage"}
	symPowerLimit        = []string{"nvmlDeviceGetEnforcedPowerLimit"}
	symClock             = []string{"nvmlDeviceGetClockInfo"}
	symClockEvents       = []string{"nvmlDeviceGetCurrentClocksEventReasons"}
	symThrottleReasons   = []string{"nvmlDeviceGetCurrentClocksThrottleReasons"}
	symPCIeThroughput    = []string{"nvmlDeviceGetPcieThroughput"}
	symPCIeReplay        = []string{"nvmlDeviceGetPcieReplayCounter"}
	symECC               = []string{"nvmlDeviceGetTotalEccErrors"}
	symRetiredPages      = []string{"nvmlDeviceGetRetiredPages"}
	symRetiredPending    = []string{"nvmlDeviceGetRetiredPagesPendingStatus"}
	symRemappedRows      = []string{"nvmlDeviceGetRemappedRows"}
	symProcesses         = []string{"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses"}
	symMIGMode           = []string{"nvmlDeviceGetMigMode"}
	symMaxMIG            = []string{"nvmlDeviceGetMaxMigDeviceCount"}
	symMIGHandle         = []string{"nvmlDeviceGetMigDeviceHandleByIndex"}
	symGPUInstanceID     = []string{"nvmlDeviceGetGpuInstanceId"}
	symComputeInstanceID = []string{"nvmlDeviceGetComputeInstanceId"}
	symGPMSupport        = []string{"nvmlGpmQueryDeviceSupport"}
	symGPMAlloc          = []string{"nvmlGpmSampleAlloc"}
	symGPMSample         = []string{"nvmlGpmSampleGet"}
	symGPMMetrics        = []string{"nvmlGpmMetricsGet"}
	symGPMFree           = []string{"nvmlGpmSampleFree"}
)

// Symbols lists every C symbol the probe may call (for documentation and tests).
func Symbols() []string {
	var out []string
	for _, group := range allSymbols {
		out = append(out, group...)
	}
	return out
}

var allSymbols = [][]string{
	symDriverVersion, symCUDAVersion, symDeviceCount, symHandleByIndex, symProcessName, symShutdown,
	symEventSetCreate, symEventSetWait, symEventSetFree, symRegisterEvents, symSupportedEvents,
	symUUID, symName, symMinor, symPCIInfo, symUtilization, symMemoryV2, symMemoryV1, symTemperature, symPower,
	symPowerLimit, symClock, symClockEvents, symThrottleReasons, symPCIeThroughput, symPCIeReplay,
	symECC, symRetiredPages, symRetiredPending, symRemappedRows, symProcesses, symMIGMode, symMaxMIG,
	symMIGHandle, symGPUInstanceID, symComputeInstanceID,
	symGPMSupport, symGPMAlloc, symGPMSample, symGPMMetrics, symGPMFree,
}

// Option configures Open.
type Option func(*Library)

// WithSymbolLookup replaces the symbol lookup (default: lib.Extensions().LookupSymbol).
// A nil error means the symbol exists.
func WithSymbolLookup(lookup func(name string) error) Option {
	return func(l *Library) { l.lookup = lookup }
}

// WithEventWait sets how long one event wait may block (default 500 ms); it bounds how long
// WatchEvents takes to notice its context ending.
func WithEventWait(d time.Duration) Option {
	return func(l *Library) { l.eventWait = d }
}

// Library is an initialised, symbol-checked NVML.
type Library struct {
	lib       nvml.Interface
	lookup    func(string) error
	have      map[string]bool
	eventWait time.Duration
}

var _ gpu.Library = (*Library)(nil)

// Open initialises lib (the real nvml.New() or a go-nvml mock) and resolves its symbols.
// Without the library it returns an error wrapping gpu.ErrLibraryNotFound and calls nothing else.
func Open(lib nvml.Interface, opts ...Option) (*Library, error) {
	l := &Library{lib: lib, eventWait: 500 * time.Millisecond}
	for _, o := range opts {
		o(l)
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, initError(ret)
	}
	if l.lookup == nil {
		l.lookup = lib.Extensions().LookupSymbol
	}
	l.have = make(map[string]bool)
	for _, group := range allSymbols {
		for _, name := range group {
			l.have[name] = l.lookup(name) == nil
		}
	}
	return l, nil
}

// Missing lists the probe's symbols that the loaded library lacks.
func (l *Library) Missing() []string {
	var out []string
	for _, group := range allSymbols {
		for _, name := range group {
			if !l.have[name] {
				out = append(out, name)
			}
		}
	}
	return out
}

// initError describes a failed Init without calling NVML again (not even nvmlErrorString).
func initError(ret nvml.Return) error {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return fmt.Errorf("%w: no NVIDIA driver on this host, or the driver's libraries are not visible to the probe", gpu.ErrLibraryNotFound)
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return errors.New("NVML init: the NVIDIA kernel driver is not loaded")
	case nvml.ERROR_NO_PERMISSION:
		return errors.New("NVML init: no permission to open /dev/nvidia* devices")
	case nvml.ERROR_UNINITIALIZED, nvml.ERROR_UNKNOWN:
		return fmt.Errorf("NVML init failed (return code %d)", int32(ret))
	default:
		return fmt.Errorf("NVML init failed (return code %d)", int32(ret))
	}
}

// symbol returns the first present name of a group, or "" when none is.
func (l *Library) symbol(group []string) string {
	for _, name := range group {
		if l.have[name] {
			return name
		}
	}
	return ""
}

func (l *Library) has(group []string) bool { return l.symbol(group) != "" }

// guard reports a missing-symbol error for group, or nil when a call is allowed.
func (l *Library) guard(group []string) error {
	if l.has(group) {
		return nil
	}
	return &gpu.CallError{Func: group[0], Err: gpu.ErrSymbolMissing}
}

// result maps an NVML return code onto the gpu package's errors.
func result(group []string, ret nvml.Return) error {
	switch ret {
	case nvml.SUCCESS:
		return nil
	case nvml.ERROR_NOT_SUPPORTED:
		return &gpu.CallError{Func: group[0], Err: gpu.ErrNotSupported}
	case nvml.ERROR_FUNCTION_NOT_FOUND:
		return &gpu.CallError{Func: group[0], Err: gpu.ErrSymbolMissing}
	case nvml.ERROR_GPU_IS_LOST:
		return &gpu.CallError{Func: group[0], Err: gpu.ErrGPULost}
	case nvml.ERROR_TIMEOUT:
		return &gpu.CallError{Func: group[0], Err: gpu.ErrTimeout}
	default:
		return &gpu.CallError{Func: group[0], Err: returnError(ret)}
	}
}

// returnError names a return code. go-nvml's Return.Error uses nvmlErrorString once the
// library is loaded, a symbol every NVML since the first release exports.
type returnError nvml.Return

func (r returnError) Error() string { return nvml.Return(r).Error() }

func (l *Library) DriverVersion() (string, error) {
	if err := l.guard(symDriverVersion); err != nil {
		return "", err
	}
	v, ret := l.lib.SystemGetDriverVersion()
	return v, result(symDriverVersion, ret)
}

func (l *Library) CUDADriverVersion() (int, error) {
	if err := l.guard(symCUDAVersion); err != nil {
		return 0, err
	}
	v, ret := l.lib.SystemGetCudaDriverVersion()
	return v, result(symCUDAVersion, ret)
}

func (l *Library) DeviceCount() (int, error) {
	if err := l.guard(symDeviceCount); err != nil {
		return 0, err
	}
	n, ret := l.lib.DeviceGetCount()
	return n, result(symDeviceCount, ret)
}

func (l *Library) DeviceByIndex(index int) (gpu.Device, error) {
	if err := l.guard(symHandleByIndex); err != nil {
		return nil, err
	}
	h, ret := l.lib.DeviceGetHandleByIndex(index)
	if err := result(symHandleByIndex, ret); err != nil {
		return nil, err
	}
	return &device{l: l, h: h}, nil
}

func (l *Library) ProcessName(pid uint32) (string, error) {
	if err := l.guard(symProcessName); err != nil {
		return "", err
	}
	name, ret := l.lib.SystemGetProcessName(int(pid))
	return name, result(symProcessName, ret)
}

func (l *Library) Shutdown() error {
	if err := l.guard(symShutdown); err != nil {
		return err
	}
	return result(symShutdown, l.lib.Shutdown())
}

// WatchEvents registers XID critical-error events on devices and delivers them until ctx ends.
func (l *Library) WatchEvents(ctx context.Context, devices []gpu.Device, fn func(gpu.Event)) error {
	for _, g := range [][]string{symEventSetCreate, symEventSetWait, symEventSetFree, symRegisterEvents} {
		if err := l.guard(g); err != nil {
			return err
		}
	}
	set, ret := l.lib.EventSetCreate()
	if err := result(symEventSetCreate, ret); err != nil {
		return err
	}
	defer set.Free()

	handles := make([]nvml.Device, len(devices))
	registered := 0
	var lastErr error = &gpu.CallError{Func: symRegisterEvents[0], Err: gpu.ErrNotSupported}
	for i, d := range devices {
		dev, ok := d.(*device)
		if !ok || dev == nil {
			continue
		}
		handles[i] = dev.h
		if l.has(symSupportedEvents) {
			mask, ret := dev.h.GetSupportedEventTypes()
			if ret == nvml.SUCCESS && mask&nvml.EventTypeXidCriticalError == 0 {
				continue
			}
		}
		if err := result(symRegisterEvents, dev.h.RegisterEvents(nvml.EventTypeXidCriticalError, set)); err != nil {
			lastErr = err
			continue
		}
		registered++
	}
	if registered == 0 {
		return lastErr
	}

	waitMs := uint32(l.eventWait / time.Millisecond)
	for ctx.Err() == nil {
		data, ret := set.Wait(waitMs)
		switch ret {
		case nvml.SUCCESS:
			if data.EventType&nvml.EventTypeXidCriticalError == 0 {
				continue
			}
			fn(gpu.Event{Device: matchDevice(handles, data.Device), XID: data.EventData})
		case nvml.ERROR_TIMEOUT:
		default:
			// A lost GPU or a driver hiccup: back off so a failing wait cannot spin.
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

func matchDevice(handles []nvml.Device, h nvml.Device) int {
	if h == nil {
		return -1
	}
	for i, candidate := range handles {
		if candidate != nil && candidate == h {
			return i
		}
	}
	return -1
}

// device is a guarded handle.
type device struct {
	l   *Library
	h   nvml.Device
	gpm gpmState
}

var _ gpu.Device = (*device)(nil)

func (d *device) UUID() (string, error) {
	if err := d.l.guard(symUUID); err != nil {
		return "", err
	}
	v, ret := d.h.GetUUID()
	return v, result(symUUID, ret)
}

func (d *device) Name() (string, error) {
	if err := d.l.guard(symName); err != nil {
		return "", err
	}
	v, ret := d.h.GetName()
	return v, result(symName, ret)
}

func (d *device) MinorNumber() (int, error) {
	if err := d.l.guard(symMinor); err != nil {
		return 0, err
	}
	v, ret := d.h.GetMinorNumber()
	return v, result(symMinor, ret)
}

func (d *device) PCIBusID() (string, error) {
	if err := d.l.guard(symPCIInfo); err != nil {
		return "", err
	}
	p, ret := d.h.GetPciInfo()
	if err := result(symPCIInfo, ret); err != nil {
		return "", err
	}
	return cString(p.BusId[:]), nil
}

// cString reads a NUL-terminated C char array.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

func (d *device) Utilization() (gpu.Utilization, error) {
	if err := d.l.guard(symUtilization); err != nil {
		return gpu.Utilization{}, err
	}
	u, ret := d.h.GetUtilizationRates()
	return gpu.Utilization{GPU: u.Gpu, Memory: u.Memory}, result(symUtilization, ret)
}

// Memory prefers the v2 call (it reports reserved memory) and falls back to v1 when the
// symbol is absent or the driver rejects the struct version.
func (d *device) Memory() (gpu.Memory, error) {
	if d.l.has(symMemoryV2) {
		m, ret := d.h.GetMemoryInfo_v2()
		switch ret {
		case nvml.SUCCESS:
			return gpu.Memory{Total: m.Total, Used: m.Used, Reserved: m.Reserved, HasReserved: true}, nil
		case nvml.ERROR_GPU_IS_LOST:
			return gpu.Memory{}, result(symMemoryV2, ret)
		}
	}
	if err := d.l.guard(symMemoryV1); err != nil {
		return gpu.Memory{}, err
	}
	m, ret := d.h.GetMemoryInfo()
	return gpu.Memory{Total: m.Total, Used: m.Used}, result(symMemoryV1, ret)
}

func (d *device) TemperatureCelsius() (uint32, error) {
	if err := d.l.guard(symTemperature); err != nil {
		return 0, err
	}
	v, ret := d.h.GetTemperature(nvml.TEMPERATURE_GPU)
	return v, result(symTemperature, ret)
}

func (d *device) PowerMilliwatts() (uint32, error) {
	if err := d.l.guard(symPower); err != nil {
		return 0, err
	}
	v, ret := d.h.GetPowerUsage()
	return v, result(symPower, ret)
}

func (d *device) PowerLimitMilliwatts() (uint32, error) {
	if err := d.l.guard(symPowerLimit); err != nil {
		return 0, err
	}
	v, ret := d.h.GetEnforcedPowerLimit()
	return v, result(symPowerLimit, ret)
}

func (d *device) ClockMHz(clock gpu.Clock) (uint32, error) {
	if err := d.l.guard(symClock); err != nil {
		return 0, err
	}
	t := nvml.CLOCK_SM
	if clock == gpu.ClockMemory {
		t = nvml.CLOCK_MEM
	}
	v, ret := d.h.GetClockInfo(t)
	return v, result(symClock, ret)
}

// ClockEventReasons uses the current name (drivers from 535 on) and falls back to the
// deprecated throttle-reasons call on older drivers; both return the same bitmask.
func (d *device) ClockEventReasons() (uint64, error) {
	if d.l.has(symClockEvents) {
		v, ret := d.h.GetCurrentClocksEventReasons()
		return v, result(symClockEvents, ret)
	}
	if err := d.l.guard(symThrottleReasons); err != nil {
		return 0, err
	}
	v, ret := d.h.GetCurrentClocksThrottleReasons()
	return v, result(symThrottleReasons, ret)
}

func (d *device) PCIeThroughputKBps(dir gpu.Direction) (uint32, error) {
	if err := d.l.guard(symPCIeThroughput); err != nil {
		return 0, err
	}
	counter := nvml.PCIE_UTIL_RX_BYTES
	if dir == gpu.PCIeTX {
		counter = nvml.PCIE_UTIL_TX_BYTES
	}
	v, ret := d.h.GetPcieThroughput(counter)
	return v, result(symPCIeThroughput, ret)
}

func (d *device) PCIeReplayCounter() (uint64, error) {
	if err := d.l.guard(symPCIeReplay); err != nil {
		return 0, err
	}
	v, ret := d.h.GetPcieReplayCounter()
	if v < 0 {
		v = 0
	}
	return uint64(v), result(symPCIeReplay, ret)
}

func (d *device) ECCErrors(kind gpu.ECCKind) (uint64, error) {
	if err := d.l.guard(symECC); err != nil {
		return 0, err
	}
	t := nvml.MEMORY_ERROR_TYPE_CORRECTED
	if kind == gpu.ECCUncorrected {
		t = nvml.MEMORY_ERROR_TYPE_UNCORRECTED
	}
	v, ret := d.h.GetTotalEccErrors(t, nvml.VOLATILE_ECC)
	return v, result(symECC, ret)
}

func (d *device) RetiredPages(cause gpu.RetirementCause) (uint64, error) {
	if err := d.l.guard(symRetiredPages); err != nil {
		return 0, err
	}
	c := nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
	if cause == gpu.RetiredDoubleBit {
		c = nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
	}
	pages, ret := d.h.GetRetiredPages(c)
	return uint64(len(pages)), result(symRetiredPages, ret)
}

func (d *device) RetiredPagesPending() (bool, error) {
	if err := d.l.guard(symRetiredPending); err != nil {
		return false, err
	}
	v, ret := d.h.GetRetiredPagesPendingStatus()
	return v == nvml.FEATURE_ENABLED, result(symRetiredPending, ret)
}

func (d *device) RemappedRows() (gpu.RemappedRows, error) {
	if err := d.l.guard(symRemappedRows); err != nil {
		return gpu.RemappedRows{}, err
	}
	corr, unc, pending, failure, ret := d.h.GetRemappedRows()
	return gpu.RemappedRows{Correctable: uint64(max(corr, 0)), Uncorrectable: uint64(max(unc, 0)), Pending: pending, Failure: failure},
		result(symRemappedRows, ret)
}

// valueNotAvailable is NVML_VALUE_NOT_AVAILABLE for 64-bit fields.
const valueNotAvailable = ^uint64(0)

func (d *device) Processes() ([]gpu.Process, error) {
	if err := d.l.guard(symProcesses); err != nil {
		return nil, err
	}
	infos, ret := d.h.GetComputeRunningProcesses()
	if err := result(symProcesses, ret); err != nil {
		return nil, err
	}
	out := make([]gpu.Process, 0, len(infos))
	for _, p := range infos {
		known := p.UsedGpuMemory != valueNotAvailable
		used := p.UsedGpuMemory
		if !known {
			used = 0
		}
		out = append(out, gpu.Process{PID: p.Pid, UsedBytes: used, UsedKnown: known})
	}
	return out, nil
}

func (d *device) MIGEnabled() (bool, error) {
	if err := d.l.guard(symMIGMode); err != nil {
		return false, err
	}
	current, _, ret := d.h.GetMigMode()
	return current == nvml.DEVICE_MIG_ENABLE, result(symMIGMode, ret)
}

func (d *device) MIGDevices() ([]gpu.MIGDevice, error) {
	for _, g := range [][]string{symMaxMIG, symMIGHandle} {
		if err := d.l.guard(g); err != nil {
			return nil, err
		}
	}
	n, ret := d.h.GetMaxMigDeviceCount()
	if err := result(symMaxMIG, ret); err != nil {
		return nil, err
	}
	var out []gpu.MIGDevice
	for i := 0; i < n; i++ {
		h, ret := d.h.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // slot not populated
		}
		if err := result(symMIGHandle, ret); err != nil {
			if errors.Is(err, gpu.ErrGPULost) {
				return nil, err
			}
			continue
		}
		mig := gpu.MIGDevice{Device: &device{l: d.l, h: h, gpm: gpmState{mig: true}}, Index: i}
		mig.GPUInstanceID, mig.ComputeInstanceID, mig.IDsErr = d.instanceIDs(h)
		out = append(out, mig)
	}
	return out, nil
}

func (d *device) instanceIDs(h nvml.Device) (int, int, error) {
	for _, g := range [][]string{symGPUInstanceID, symComputeInstanceID} {
		if err := d.l.guard(g); err != nil {
			return 0, 0, err
		}
	}
	gi, ret := h.GetGpuInstanceId()
	if err := result(symGPUInstanceID, ret); err != nil {
		return 0, 0, err
	}
	ci, ret := h.GetComputeInstanceId()
	if err := result(symComputeInstanceID, ret); err != nil {
		return 0, 0, err
	}
	return gi, ci, nil
}
