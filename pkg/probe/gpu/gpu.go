// Package gpu is the probe's own narrow view of NVML: the calls collection needs, with
// NVML's return codes folded into a few errors that say what the caller should do.
// The cgo binding lives in gpu/nvmlgpu; collection logic depends only on this package.
package gpu

import (
	"context"
	"errors"
	"fmt"
)

// Errors every implementation maps NVML's return codes onto.
var (
	// ErrNotSupported: the device lacks the feature; omit the series.
	ErrNotSupported = errors.New("not supported")
	// ErrSymbolMissing: the installed driver's NVML lacks the function; omit the series.
	ErrSymbolMissing = errors.New("symbol missing from the installed NVML")
	// ErrGPULost: the GPU fell off the bus or stopped answering.
	ErrGPULost = errors.New("GPU is lost")
	// ErrLibraryNotFound: libnvidia-ml.so.1 could not be loaded.
	ErrLibraryNotFound = errors.New("NVML library (libnvidia-ml.so.1) not found")
	// ErrTimeout: an event wait ended with nothing to report.
	ErrTimeout = errors.New("timeout")
	// ErrFirstSample: a reading over an interval took its first sample; the next call answers.
	ErrFirstSample = errors.New("first sample taken; the reading needs a second")
)

// Absent reports whether err means "this reading does not exist here" (omit, not an error).
func Absent(err error) bool {
	return errors.Is(err, ErrNotSupported) || errors.Is(err, ErrSymbolMissing) || errors.Is(err, ErrFirstSample)
}

// CallError is a failed NVML call with its function name.
type CallError struct {
	Func string
	Err  error
}

func (e *CallError) Error() string { return fmt.Sprintf("%s: %v", e.Func, e.Err) }
func (e *CallError) Unwrap() error { return e.Err }

// Library is an initialised NVML.
type Library interface {
	DriverVersion() (string, error)
	// CUDADriverVersion is the CUDA version the driver supports, e.g. 12040 for 12.4.
	CUDADriverVersion() (int, error)
	DeviceCount() (int, error)
	DeviceByIndex(index int) (Device, error)
	// ProcessName names a process by PID (as NVML sees it).
	ProcessName(pid uint32) (string, error)
	// WatchEvents delivers XID events of the given devices to fn until ctx ends. It returns
	// an error at once when events cannot be watched at all (unsupported, symbol missing).
	WatchEvents(ctx context.Context, devices []Device, fn func(Event)) error
	Shutdown() error
}

// Event is one XID critical error.
type Event struct {
	// Device is the index into the devices given to WatchEvents, -1 when not matched.
	Device int
	XID    uint64
}

// Device is one GPU or MIG device handle.
type Device interface {
	UUID() (string, error)
	Name() (string, error)
	MinorNumber() (int, error)
	// PCIBusID is the device's PCI bus id as NVML spells it ("00000000:07:00.0").
	PCIBusID() (string, error)
	Utilization() (Utilization, error)
	Memory() (Memory, error)
	TemperatureCelsius() (uint32, error)
	PowerMilliwatts() (uint32, error)
	PowerLimitMilliwatts() (uint32, error)
	ClockMHz(clock Clock) (uint32, error)
	// ClockEventReasons is NVML's clock-event (throttle) bitmask.
	ClockEventReasons() (uint64, error)
	// PCIeThroughputKBps samples PCIe traffic in KB/s over about 20 ms.
	PCIeThroughputKBps(dir Direction) (uint32, error)
	PCIeReplayCounter() (uint64, error)
	// ECCErrors are volatile totals (since the driver loaded).
	ECCErrors(kind ECCKind) (uint64, error)
	RetiredPages(cause RetirementCause) (uint64, error)
	RetiredPagesPending() (bool, error)
	RemappedRows() (RemappedRows, error)
	Processes() ([]Process, error)
	MIGEnabled() (bool, error)
	// MIGDevices lists the MIG devices of a GPU in MIG mode.
	MIGDevices() ([]MIGDevice, error)
	// Activity reads the GPU performance monitor (Hopper and later) over the time since the
	// previous call on this device; the first call answers ErrFirstSample.
	Activity() (Activity, error)
}

// Activity is the share of an interval, 0..1, that each unit of the GPU was busy, as the GPU
// performance monitor counts it; nil where the GPU does not report that unit. It says more than
// Utilization's "a kernel ran": a decode step that waits on memory keeps the graphics engine
// active with the tensor pipes mostly idle.
type Activity struct {
	GraphicsEngine *float64 // any graphics or compute context active (DCGM's GR_ENGINE_ACTIVE)
	Tensor         *float64 // any tensor pipe active (DCGM's PIPE_TENSOR_ACTIVE)
	DRAM           *float64 // device memory bandwidth used against its peak (DCGM's DRAM_ACTIVE)
}

// MIGDevice is a MIG device handle with its instance ids.
type MIGDevice struct {
	Device
	Index             int
	GPUInstanceID     int
	ComputeInstanceID int
	// IDsErr is set when the instance ids could not be read.
	IDsErr error
}

// Utilization is NVML's utilisation rates in percent.
type Utilization struct {
	GPU    uint32 // percent of time a kernel ran
	Memory uint32 // percent of time device memory was read or written (bandwidth use)
}

// Memory is the device memory state in bytes.
type Memory struct {
	Total, Used uint64
	Reserved    uint64
	HasReserved bool // only the v2 call reports reserved memory
}

// RemappedRows is the row-remapper state (Ampere and later).
type RemappedRows struct {
	Correctable, Uncorrectable uint64
	Pending, Failure           bool
}

// Process is one compute process on a device.
type Process struct {
	PID       uint32
	UsedBytes uint64
	// UsedKnown is false when NVML could not account the memory (e.g. under some vGPU setups).
	UsedKnown bool
}

// Clock names a clock domain.
type Clock int

const (
	ClockSM Clock = iota
	ClockMemory
)

// Direction names a PCIe direction.
type Direction int

const (
	PCIeRX Direction = iota
	PCIeTX
)

// ECCKind names an ECC error class.
type ECCKind int

const (
	ECCCorrected ECCKind = iota
	ECCUncorrected
)

// RetirementCause names why a page was retired.
type RetirementCause int

const (
	RetiredSingleBit RetirementCause = iota // multiple single-bit errors
	RetiredDoubleBit
)
