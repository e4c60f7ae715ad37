// Package mockgpu builds a simulated NVML (go-nvml's dgxa100 / dgxh100 mock servers) whose
// readings follow a scenario clock, so the probe, dashboards and tests have GPUs without a
// GPU. Every NVML call the probe makes is filled; retired pages answer NOT_SUPPORTED, as on
// the real A100 and H100 (they remap rows instead).
package mockgpu

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/inferscope/inferscope/pkg/probe/mockclock"
	"github.com/inferscope/inferscope/pkg/probe/procinfo"
)

// Systems the mock can play.
const (
	DGXA100 = mockclock.DGXA100
	DGXH100 = mockclock.DGXH100
)

// The mock's truth comes from a clock (package mockclock), the small interface a scenario
// implements; the names are kept here for the mock's callers.
type (
	State     = mockclock.State
	XID       = mockclock.XID
	Clock     = mockclock.Clock
	ClockFunc = mockclock.ClockFunc
)

// Options configures New.
type Options struct {
	System   string // DGXA100 (default) or DGXH100
	Clock    Clock  // required: the truth the mock shows
	Instance string // which scenario instance the mock plays
	// GPUs overrides the number of GPUs (default 8).
	GPUs int
	// Now is the scenario time (default time.Now).
	Now func() time.Time
	// EventPoll is how often a waiting event set re-reads the clock (default 250 ms).
	EventPoll time.Duration
}

// System is a simulated node. It is an nvml.Interface for the probe, backed by a go-nvml mock
// server (Server) whose Func fields tests may override. The probe's calls go to those
// functions directly: the moq mocks record every call they receive, which in a long-running
// --mock process would grow without bound.
type System struct {
	nvml.Interface
	Server *server.Server
	opts   Options
	model  string

	mu      sync.Mutex
	lost    map[int]bool // forced by tests
	pending []pendingXID
	cache   []cachedState // per GPU: the clock's answer for the current second
	wrapped []*handle     // the probe's handles, one per mock device
}

type cachedState struct {
	at time.Time
	st State
}

type pendingXID struct {
	gpu  int
	code uint64
}

// New builds a simulated system.
func New(o Options) (*System, error) {
	if o.System == "" {
		o.System = DGXA100
	}
	if o.Clock == nil {
		return nil, fmt.Errorf("mockgpu: no clock")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.GPUs <= 0 {
		o.GPUs = 8
	}
	if o.EventPoll <= 0 {
		o.EventPoll = 250 * time.Millisecond
	}
	var srv *server.Server
	var newDevice func(int) *server.Device
	switch o.System {
	case DGXA100:
		srv, newDevice = dgxa100.New(), dgxa100.NewDevice
	case DGXH100:
		srv, newDevice = dgxh100.New(), dgxh100.NewDevice
	default:
		return nil, fmt.Errorf("unknown mock system %q: use %s or %s", o.System, DGXA100, DGXH100)
	}
	if o.GPUs != len(srv.Devices) {
		srv.Devices = make([]nvml.Device, o.GPUs)
		for i := range srv.Devices {
			srv.Devices[i] = newDevice(i)
		}
	}
	s := &System{Server: srv, opts: o, lost: map[int]bool{}, cache: make([]cachedState, o.GPUs)}
	s.Interface = &view{Interface: srv, sys: s}
	for i, d := range srv.Devices {
		s.fill(i, d.(*server.Device))
	}
	srv.SystemGetProcessNameFunc = func(pid int) (string, nvml.Return) {
		if gpu, ok := gpuOfPID(uint32(pid), o.GPUs); ok {
			return processPath(gpu), nvml.SUCCESS
		}
		return "", nvml.ERROR_NOT_FOUND
	}
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return s.newEventSet(), nvml.SUCCESS }
	return s, nil
}

// SetLost forces GPU gpu lost (or back) regardless of the clock.
func (s *System) SetLost(gpu int, lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost[gpu] = lost
}

// InjectXID queues an XID event on gpu for the next event wait.
func (s *System) InjectXID(gpu int, code uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, pendingXID{gpu, code})
}

// Device returns the mock device gpu, to override single calls in tests.
func (s *System) Device(gpu int) *server.Device { return s.Server.Devices[gpu].(*server.Device) }

// GPUs is the number of simulated GPUs.
func (s *System) GPUs() int { return len(s.Server.Devices) }

// truth asks the clock about gpu at the current second. One collection makes some twenty
// calls per GPU; they all see the same state and the clock is asked once.
func (s *System) truth(gpu int) State {
	at := s.opts.Now().Truncate(time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &s.cache[gpu]
	if c.at.IsZero() || !c.at.Equal(at) {
		c.at, c.st = at, s.opts.Clock.GPU(s.opts.Instance, gpu, at)
	}
	return c.st
}

func (s *System) state(gpu int) (State, bool) {
	st := s.truth(gpu)
	s.mu.Lock()
	forced := s.lost[gpu]
	s.mu.Unlock()
	return st, st.Lost || forced
}

// UUIDFor is the stable UUID the mock gives GPU gpu of instance on system.
func UUIDFor(system, instance string, gpu int) string {
	h := fnv.New128a()
	fmt.Fprintf(h, "%s/%s/%d", system, instance, gpu)
	b := h.Sum(nil)
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (s *System) fill(i int, d *server.Device) {
	d.UUID = UUIDFor(s.opts.System, s.opts.Instance, i)
	d.PciBusID = fmt.Sprintf("0000:%02x:00.0", busOf(i))
	memory := memoryModel(d.MemoryInfo.Total)
	s.fillIdentity(i, d)
	s.fillResources(i, d, memory)
	s.fillHealth(i, d)
	s.fillProcesses(i, d, memory)
	s.fillGPM(i, d)
}

// lost is NVML's answer for every call to a GPU that has fallen off the bus.
const lost = nvml.ERROR_GPU_IS_LOST

// memoryModel splits a state's memory ratio into total, used and reserved bytes; total is the
// mock device's own size unless the state names one.
func memoryModel(total uint64) func(State) (t, used, reserved uint64) {
	return func(st State) (t, used, reserved uint64) {
		t = total
		if st.MemTotalBytes > 0 {
			t = st.MemTotalBytes
		}
		reserved = t / 100 * 1 // about what the driver keeps on a 40-80 GB part
		used = uint64(clamp01(st.MemUsedRatio) * float64(t))
		return t, used, reserved
	}
}

// fillIdentity answers the identity calls: UUID, name, minor number, MIG mode, event types.
func (s *System) fillIdentity(i int, d *server.Device) {
	// go-nvml's configs say "Mock NVIDIA ..."; real NVML answers "NVIDIA ...".
	name := strings.TrimPrefix(d.Config.Name, "Mock ")

	// Identity answers even for a lost GPU in real NVML only sometimes; keep it simple and
	// answer lost for everything once the GPU is gone.
	d.GetUUIDFunc = func() (string, nvml.Return) {
		if _, l := s.state(i); l {
			return "", lost
		}
		return d.UUID, nvml.SUCCESS
	}
	d.GetNameFunc = func() (string, nvml.Return) {
		if _, l := s.state(i); l {
			return "", lost
		}
		return name, nvml.SUCCESS
	}
	d.GetMinorNumberFunc = func() (int, nvml.Return) {
		if _, l := s.state(i); l {
			return 0, lost
		}
		return d.Minor, nvml.SUCCESS
	}
	busID := BusIDFor(i)
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		if _, l := s.state(i); l {
			return nvml.PciInfo{}, lost
		}
		var p nvml.PciInfo
		for j := 0; j < len(busID) && j < len(p.BusId)-1; j++ {
			p.BusId[j] = int8(busID[j])
		}
		p.PciDeviceId = d.Config.PciDeviceId
		return p, nvml.SUCCESS
	}
	d.GetMigModeFunc = func() (int, int, nvml.Return) {
		if _, l := s.state(i); l {
			return 0, 0, lost
		}
		d.RLock()
		defer d.RUnlock()
		return d.MigMode, d.MigMode, nvml.SUCCESS
	}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_NOT_FOUND }
	d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) {
		return nvml.EventTypeXidCriticalError | nvml.EventTypeSingleBitEccError | nvml.EventTypeDoubleBitEccError, nvml.SUCCESS
	}
}

// fillResources answers the resource layer: utilisation, memory, temperature, power, clocks
// and their event reasons, PCIe throughput.
func (s *System) fillResources(i int, d *server.Device, memory func(State) (t, used, reserved uint64)) {
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		st, l := s.state(i)
		if l {
			return nvml.Utilization{}, lost
		}
		return nvml.Utilization{Gpu: percent(st.UtilRatio), Memory: percent(st.MemBandwidthRatio)}, nvml.SUCCESS
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		st, l := s.state(i)
		if l {
			return nvml.Memory{}, lost
		}
		t, used, reserved := memory(st)
		return nvml.Memory{Total: t, Used: used, Free: t - min(t, used+reserved)}, nvml.SUCCESS
	}
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
		st, l := s.state(i)
		if l {
			return nvml.Memory_v2{}, lost
		}
		t, used, reserved := memory(st)
		return nvml.Memory_v2{Version: 2, Total: t, Used: used, Reserved: reserved, Free: t - min(t, used+reserved)}, nvml.SUCCESS
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		st, l := s.state(i)
		if l {
			return 0, lost
		}
		return uint32(math.Round(st.TempCelsius)), nvml.SUCCESS
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		st, l := s.state(i)
		if l {
			return 0, lost
		}
		return uint32(math.Round(st.PowerWatts * 1000)), nvml.SUCCESS
	}
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) {
		st, l := s.state(i)
		if l {
			return 0, lost
		}
		return uint32(math.Round(st.PowerLimitWatts * 1000)), nvml.SUCCESS
	}
	d.GetClockInfoFunc = func(t nvml.ClockType) (uint32, nvml.Return) {
		st, l := s.state(i)
		if l {
			return 0, lost
		}
		switch t {
		case nvml.CLOCK_SM, nvml.CLOCK_GRAPHICS:
			return st.SMClockMHz, nvml.SUCCESS
		case nvml.CLOCK_MEM:
			return st.MemClockMHz, nvml.SUCCESS
		}
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	reasons := func() (uint64, nvml.Return) {
		st, l := s.state(i)
		if l {
			return 0, lost
		}
		return st.ThrottleReasons, nvml.SUCCESS
	}
	d.GetCurrentClocksEventReasonsFunc = reasons
	d.GetCurrentClocksThrottleReasonsFunc = reasons
	d.GetPcieThroughputFunc = func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
		st, l := s.state(i)
		if l {
			return 0, lost
		}
		// KB/s: host→device traffic follows utilisation (inputs), device→host a quarter of it.
		rx := 150_000 + st.UtilRatio*2_400_000
		if c == nvml.PCIE_UTIL_TX_BYTES {
			return uint32(rx / 4), nvml.SUCCESS
		}
		return uint32(rx), nvml.SUCCESS
	}
}

// fillHealth answers the hardware's error counters: PCIe replays, ECC, retired pages (not
// supported, as on A100 and H100) and remapped rows.
func (s *System) fillHealth(i int, d *server.Device) {
	d.GetPcieReplayCounterFunc = func() (int, nvml.Return) {
		st, l := s.state(i)
		if l {
			return 0, lost
		}
		return int(st.PCIeReplays), nvml.SUCCESS
	}
	d.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, _ nvml.EccCounterType) (uint64, nvml.Return) {
		st, l := s.state(i)
		if l {
			return 0, lost
		}
		if t == nvml.MEMORY_ERROR_TYPE_UNCORRECTED {
			return st.ECCUncorrected, nvml.SUCCESS
		}
		return st.ECCCorrected, nvml.SUCCESS
	}
	d.GetRetiredPagesFunc = func(nvml.PageRetirementCause) ([]uint64, nvml.Return) {
		if _, l := s.state(i); l {
			return nil, lost
		}
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) {
		if _, l := s.state(i); l {
			return 0, lost
		}
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) {
		st, l := s.state(i)
		if l {
			return 0, 0, false, false, lost
		}
		// Each uncorrectable error remaps a row, pending until the GPU is reset.
		return 0, int(st.ECCUncorrected), st.ECCUncorrected > 0, false, nvml.SUCCESS
	}
}

// fillProcesses answers the running processes: one serving process per GPU.
func (s *System) fillProcesses(i int, d *server.Device, memory func(State) (t, used, reserved uint64)) {
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		st, l := s.state(i)
		if l {
			return nil, lost
		}
		_, used, _ := memory(st)
		if used == 0 {
			return nil, nvml.SUCCESS
		}
		// One serving process per GPU; the rest of the used memory is the CUDA context.
		const context = 512 << 20
		return []nvml.ProcessInfo{{
			Pid: pidOf(i), UsedGpuMemory: used - min(used, context),
			GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF,
		}}, nvml.SUCCESS
	}
}

// Simulated processes: one per GPU, PIDs 41000 + gpu.
func pidOf(gpu int) uint32 { return uint32(41000 + gpu) }

func gpuOfPID(pid uint32, gpus int) (int, bool) {
	g := int(pid) - 41000
	return g, g >= 0 && g < gpus
}

func processPath(gpu int) string {
	if gpu%2 == 0 {
		return "/opt/tritonserver/bin/tritonserver"
	}
	return "/usr/bin/python3"
}

// Owners attributes the simulated processes to Kubernetes pods, one serving pod per pair of
// GPUs, as a demo cluster would show. Instance is the scenario instance (informational; the
// pod names are the same on every node, as a DaemonSet-like deployment's would be).
type Owners struct{ Instance string }

func (o Owners) Lookup(pid uint32, _ procinfo.Cycle) procinfo.Owner {
	gpu, ok := gpuOfPID(pid, 1<<16)
	if !ok {
		return procinfo.Owner{}
	}
	return procinfo.Owner{
		Container: "model-server",
		Pod:       fmt.Sprintf("inference-%d", gpu/2),
		Namespace: "inference",
	}
}
func (Owners) Forget(procinfo.Cycle) {}
func (Owners) Comm(uint32) string    { return "" }

// eventSet is a simulated NVML event set: it delivers injected XIDs and the clock's XIDs
// whose time has come, each once.
type eventSet struct {
	mock.EventSet
	s         *System
	mu        sync.Mutex
	devices   map[int]nvml.Device
	since     time.Time             // every clock XID at or before since has been delivered
	delivered map[deliveredXID]bool // delivered XIDs after since
}

type deliveredXID struct {
	gpu  int
	at   time.Time
	code uint64
}

func (s *System) newEventSet() *eventSet {
	es := &eventSet{s: s, devices: map[int]nvml.Device{}, since: s.opts.Now().Truncate(time.Second), delivered: map[deliveredXID]bool{}}
	return es
}

// Free and Wait shadow the moq methods (which would record every wait).
func (es *eventSet) Free() nvml.Return { return nvml.SUCCESS }

func (es *eventSet) Wait(timeoutMs uint32) (nvml.EventData, nvml.Return) {
	deadline := time.Now().Add(time.Duration(timeoutMs) * time.Millisecond)
	for {
		if ev, ok := es.next(); ok {
			return ev, nvml.SUCCESS
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nvml.EventData{}, nvml.ERROR_TIMEOUT
		}
		time.Sleep(min(left, es.s.opts.EventPoll))
	}
}

func (es *eventSet) next() (nvml.EventData, bool) {
	// Lock order: the set, then the system.
	es.mu.Lock()
	defer es.mu.Unlock()
	s := es.s
	s.mu.Lock()
	for k, p := range s.pending {
		if dev, ok := es.devices[p.gpu]; ok {
			s.pending = slices.Delete(s.pending, k, k+1)
			s.mu.Unlock()
			return nvml.EventData{Device: dev, EventType: nvml.EventTypeXidCriticalError, EventData: p.code}, true
		}
	}
	s.mu.Unlock()

	now := s.opts.Now().Truncate(time.Second)
	if !now.After(es.since) {
		return nvml.EventData{}, false
	}
	for gpu, dev := range es.devices {
		for _, x := range s.truth(gpu).XIDs {
			k := deliveredXID{gpu, x.At, x.Code}
			if x.At.After(es.since) && !x.At.After(now) && !es.delivered[k] {
				es.delivered[k] = true
				return nvml.EventData{Device: dev, EventType: nvml.EventTypeXidCriticalError, EventData: x.Code}, true
			}
		}
	}
	// Everything up to now is delivered.
	es.since = now
	clear(es.delivered)
	return nvml.EventData{}, false
}

func percent(r float64) uint32 { return uint32(math.Round(clamp01(r) * 100)) }

func clamp01(v float64) float64 { return math.Max(0, math.Min(1, v)) }

// BusIDFor is the PCI bus id the mock gives GPU gpu, as NVML's PciInfo.BusId spells it (an
// 8-digit domain, upper-case hex); the device's legacy PciBusID is the same bus.
func BusIDFor(gpu int) string { return fmt.Sprintf("00000000:%02X:00.0", busOf(gpu)) }

func busOf(gpu int) int { return 0x07 + gpu*0x10 }
