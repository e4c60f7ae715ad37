package collector_test

import (
	"context"
	"errors"
	"math"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/inferscope/inferscope/pkg/probe/collector"
	"github.com/inferscope/inferscope/pkg/probe/gpu"
	"github.com/inferscope/inferscope/pkg/probe/gpu/nvmlgpu"
	"github.com/inferscope/inferscope/pkg/probe/mockgpu"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
)

// truth is a fixed, distinct state per GPU, so a value read from the wrong GPU shows.
func truth(gpuIdx int) mockgpu.State {
	g := float64(gpuIdx)
	return mockgpu.State{
		UtilRatio: 0.40 + g/100, MemUsedRatio: 0.5 + g/50, MemBandwidthRatio: 0.30 + g/100,
		TempCelsius: 50 + g, PowerWatts: 200 + g, PowerLimitWatts: 400,
		SMClockMHz: 1400 - uint32(gpuIdx), MemClockMHz: 1215,
		ThrottleReasons: 0x4 | 0x40, ECCCorrected: 10 + uint64(gpuIdx), ECCUncorrected: uint64(gpuIdx % 2),
		PCIeReplays: 3,
	}
}

var fixedClock = mockgpu.ClockFunc(func(_ string, g int, _ time.Time) mockgpu.State { return truth(g) })

func newSystem(t testing.TB, o mockgpu.Options) *mockgpu.System {
	t.Helper()
	if o.Clock == nil {
		o.Clock = fixedClock
	}
	o.EventPoll = 2 * time.Millisecond
	sys, err := mockgpu.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return sys
}

func start(t testing.TB, sys *mockgpu.System, opts ...nvmlgpu.Option) *collector.Collector {
	t.Helper()
	opts = append(opts, nvmlgpu.WithEventWait(5*time.Millisecond))
	c := collector.New(collector.Config{
		Open:     func() (gpu.Library, error) { return nvmlgpu.Open(sys, opts...) },
		Interval: time.Hour, // tests drive cycles with CollectNow
		Hostname: "node-1",
		Owners:   mockgpu.Owners{},
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func near(t *testing.T, what string, got *float64, want, tol float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s missing", what)
		return
	}
	if math.Abs(*got-want) > tol {
		t.Errorf("%s = %v; want %v ± %v", what, *got, want, tol)
	}
}

func eqU[T comparable](t *testing.T, what string, got *T, want T) {
	t.Helper()
	if got == nil {
		t.Errorf("%s missing", what)
	} else if *got != want {
		t.Errorf("%s = %v; want %v", what, *got, want)
	}
}

func TestEveryReadingFromFilledMock(t *testing.T) {
	for _, system := range []string{mockgpu.DGXA100, mockgpu.DGXH100} {
		t.Run(system, func(t *testing.T) {
			sys := newSystem(t, mockgpu.Options{System: system, Instance: "node-1"})
			s := start(t, sys).Snapshot()
			if !s.NVML.OK || s.DriverVersion != "550.54.15" || s.CUDAVersion != "12.4" || s.Hostname != "node-1" {
				t.Fatalf("snapshot header = %+v", s)
			}
			if len(s.GPUs) != 8 {
				t.Fatalf("%d GPUs", len(s.GPUs))
			}
			totalBytes := uint64(40960) << 20
			wantName := "NVIDIA A100-SXM4-40GB"
			if system == mockgpu.DGXH100 {
				totalBytes, wantName = uint64(81920)<<20, "NVIDIA H100 80GB HBM3"
			}
			for i, g := range s.GPUs {
				want := truth(i)
				if g.Index != i || g.State != snapshot.StateUp || g.Error != "" {
					t.Errorf("gpu %d: index %d state %q error %q", i, g.Index, g.State, g.Error)
				}
				if g.UUID != mockgpu.UUIDFor(system, "node-1", i) || g.Name != wantName {
					t.Errorf("gpu %d: uuid %q name %q", i, g.UUID, g.Name)
				}
				eqU(t, "minor", g.Minor, i)
				// NVML reports whole percent: the ratios are exact to 0.005.
				near(t, "util", g.UtilRatio, want.UtilRatio, 0.005)
				near(t, "bandwidth", g.MemBandwidthRatio, want.MemBandwidthRatio, 0.005)
				eqU(t, "total", g.MemTotalBytes, totalBytes)
				eqU(t, "used", g.MemUsedBytes, uint64(want.MemUsedRatio*float64(totalBytes)))
				eqU(t, "reserved", g.MemReservedBytes, totalBytes/100)
				near(t, "used ratio", g.MemUsedRatio, want.MemUsedRatio, 1e-9)
				near(t, "temperature", g.TemperatureCelsius, want.TempCelsius, 0)
				near(t, "power", g.PowerWatts, want.PowerWatts, 0.0005)
				near(t, "power limit", g.PowerLimitWatts, want.PowerLimitWatts, 0)
				eqU(t, "sm clock", g.SMClockMHz, want.SMClockMHz)
				eqU(t, "mem clock", g.MemClockMHz, want.MemClockMHz)
				eqU(t, "throttle mask", g.ThrottleReasonsMask, want.ThrottleReasons)
				if len(g.ThrottleReasons) != 2 || g.ThrottleReasons[0] != "sw_power_cap" || g.ThrottleReasons[1] != "hw_thermal_slowdown" {
					t.Errorf("throttle reasons = %v", g.ThrottleReasons)
				}
				rx := (150_000 + want.UtilRatio*2_400_000)
				near(t, "pcie rx", g.PCIeRxBytesPerSecond, math.Trunc(rx)*1024, 1024)
				near(t, "pcie tx", g.PCIeTxBytesPerSecond, math.Trunc(rx/4)*1024, 1024)
				eqU(t, "replays", g.PCIeReplays, 3)
				eqU(t, "ecc corrected", g.ECCCorrected, want.ECCCorrected)
				eqU(t, "ecc uncorrected", g.ECCUncorrected, want.ECCUncorrected)
				eqU(t, "remapped uncorrectable", g.RemappedRowsUncorrectable, want.ECCUncorrected)
				eqU(t, "remapped correctable", g.RemappedRowsCorrectable, 0)
				eqU(t, "remap pending", g.RowRemapPending, want.ECCUncorrected > 0)
				eqU(t, "remap failure", g.RowRemapFailure, false)
				eqU(t, "mig", g.MIGEnabled, false)
				// A100 and H100 remap rows instead of retiring pages: NOT_SUPPORTED → null.
				if g.RetiredPagesSingleBit != nil || g.RetiredPagesDoubleBit != nil || g.RetiredPagesPending != nil {
					t.Errorf("gpu %d: retired pages should be null (NOT_SUPPORTED)", i)
				}
				if len(g.Processes) != 1 {
					t.Fatalf("gpu %d: processes %+v", i, g.Processes)
				}
				p := g.Processes[0]
				wantProc := "tritonserver"
				if i%2 == 1 {
					wantProc = "python3"
				}
				if p.PID != uint32(41000+i) || p.Name != wantProc || p.UsedMemoryBytes != *g.MemUsedBytes-512<<20 ||
					p.Pod != "inference-"+strconv.Itoa(i/2) || p.Namespace != "inference" || p.Container != "model-server" {
					t.Errorf("gpu %d: process %+v", i, p)
				}
			}
		})
	}
}

func TestNotSupportedOmitsFields(t *testing.T) {
	sys := newSystem(t, mockgpu.Options{})
	d := sys.Device(2)
	d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetPcieThroughputFunc = func(nvml.PcieUtilCounter) (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	s := start(t, sys).Snapshot()
	g := s.GPUs[2]
	if g.ECCCorrected != nil || g.ECCUncorrected != nil || g.PowerWatts != nil || g.PCIeRxBytesPerSecond != nil || g.PCIeTxBytesPerSecond != nil {
		t.Errorf("unsupported readings present: %+v", g)
	}
	if g.State != snapshot.StateUp || g.Error != "" {
		t.Errorf("NOT_SUPPORTED is not an error: state %q error %q", g.State, g.Error)
	}
	if g.PowerLimitWatts == nil || s.GPUs[1].ECCCorrected == nil {
		t.Error("supported readings missing")
	}
}

func TestMissingSymbolOmitsFieldsAndIsNeverCalled(t *testing.T) {
	sys := newSystem(t, mockgpu.Options{})
	var called atomic.Int32
	for i := 0; i < sys.GPUs(); i++ {
		sys.Device(i).GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
			called.Add(1)
			return 0, nvml.SUCCESS
		}
	}
	c := start(t, sys, nvmlgpu.WithSymbolLookup(func(name string) error {
		if name == "nvmlDeviceGetTemperature" {
			return errors.New("undefined symbol")
		}
		return nil
	}))
	c.CollectNow()
	for _, g := range c.Snapshot().GPUs {
		if g.TemperatureCelsius != nil || g.State != snapshot.StateUp || g.Error != "" || g.PowerWatts == nil {
			t.Errorf("gpu %d: temperature %v state %q error %q", g.Index, g.TemperatureCelsius, g.State, g.Error)
		}
	}
	if n := called.Load(); n != 0 {
		t.Errorf("missing function called %d times", n)
	}
}

func TestOtherErrorsAreReportedAndOthersKept(t *testing.T) {
	sys := newSystem(t, mockgpu.Options{})
	sys.Device(4).GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	g := start(t, sys).Snapshot().GPUs[4]
	if g.State != snapshot.StateUp || g.SMClockMHz != nil || g.TemperatureCelsius == nil {
		t.Errorf("gpu 4: %+v", g)
	}
	if g.Error == "" {
		t.Error("unexpected NVML error not reported")
	}
}

func TestGPULostMidRun(t *testing.T) {
	sys := newSystem(t, mockgpu.Options{Instance: "n"})
	c := start(t, sys)
	uuid3 := c.Snapshot().GPUs[3].UUID

	sys.SetLost(3, true)
	s := c.CollectNow()
	for i, g := range s.GPUs {
		if i == 3 {
			if g.State != snapshot.StateLost || g.Error == "" || g.UUID != uuid3 || g.Name == "" {
				t.Errorf("lost gpu: state %q error %q uuid %q name %q", g.State, g.Error, g.UUID, g.Name)
			}
			if g.UtilRatio != nil || g.MemUsedBytes != nil || g.Processes != nil {
				t.Errorf("lost gpu still has readings: %+v", g)
			}
			continue
		}
		if g.State != snapshot.StateUp || g.UtilRatio == nil {
			t.Errorf("gpu %d affected by the lost one: %q", i, g.State)
		}
	}
	sys.SetLost(3, false)
	if g := c.CollectNow().GPUs[3]; g.State != snapshot.StateUp || g.UtilRatio == nil {
		t.Errorf("recovered gpu: %+v", g)
	}
}

func TestGPULostBeforeStart(t *testing.T) {
	sys := newSystem(t, mockgpu.Options{})
	sys.SetLost(0, true)
	c := start(t, sys)
	g := c.Snapshot().GPUs[0]
	if g.State != snapshot.StateLost || g.UUID != "" {
		t.Errorf("gpu 0: %+v", g)
	}
	sys.SetLost(0, false)
	if g := c.CollectNow().GPUs[0]; g.State != snapshot.StateUp || g.UUID == "" {
		t.Errorf("gpu 0 after recovery: %+v", g)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestXIDEventsCountedPerCode(t *testing.T) {
	sys := newSystem(t, mockgpu.Options{})
	c := start(t, sys)
	waitFor(t, "event watcher", func() bool { return c.Stats().EventsWatched })
	sys.InjectXID(2, 79)
	sys.InjectXID(2, 31)
	sys.InjectXID(2, 31)
	sys.InjectXID(5, 48)
	waitFor(t, "4 XID events", func() bool { return c.Stats().XIDEvents == 4 })
	s := c.CollectNow()
	want := map[int]map[string]uint64{2: {"79": 1, "31": 2}, 5: {"48": 1}}
	for i, g := range s.GPUs {
		w := want[i]
		if g.XIDErrors == nil {
			t.Errorf("gpu %d: xids nil (not measured) while the watcher runs; want a count", i)
			continue
		}
		if len(g.XIDErrors) != len(w) {
			t.Errorf("gpu %d: xids %v; want %v", i, g.XIDErrors, w)
			continue
		}
		for code, n := range w {
			if g.XIDErrors[code] != n {
				t.Errorf("gpu %d: xid %s = %d; want %d", i, code, g.XIDErrors[code], n)
			}
		}
	}
	if s.GPUs[2].LastXID == nil || *s.GPUs[2].LastXID != 31 || s.GPUs[5].LastXID == nil || *s.GPUs[5].LastXID != 48 {
		t.Errorf("last xids: %v %v", s.GPUs[2].LastXID, s.GPUs[5].LastXID)
	}
	// Counters survive the GPU getting lost.
	sys.SetLost(2, true)
	if g := c.CollectNow().GPUs[2]; g.State != snapshot.StateLost || g.XIDErrors["31"] != 2 {
		t.Errorf("lost gpu lost its XID counts: %+v", g)
	}
}

// XIDs from the scenario clock are delivered once, when their time comes.
func TestXIDEventsFromClock(t *testing.T) {
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(base.UnixNano())
	clock := mockgpu.ClockFunc(func(_ string, g int, _ time.Time) mockgpu.State {
		st := truth(g)
		if g == 6 {
			st.XIDs = []mockgpu.XID{{At: base.Add(-time.Minute), Code: 13}, {At: base.Add(time.Minute), Code: 43}, {At: base.Add(time.Minute), Code: 45}}
		}
		return st
	})
	sys := newSystem(t, mockgpu.Options{Clock: clock, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	c := start(t, sys)
	waitFor(t, "event watcher", func() bool { return c.Stats().EventsWatched })
	now.Store(base.Add(2 * time.Minute).UnixNano())
	waitFor(t, "2 XID events", func() bool { return c.Stats().XIDEvents >= 2 })
	g := c.CollectNow().GPUs[6]
	if len(g.XIDErrors) != 2 || g.XIDErrors["43"] != 1 || g.XIDErrors["45"] != 1 {
		t.Errorf("xids = %v; want 43 and 45 once each (13 happened before the probe started)", g.XIDErrors)
	}
}

func TestMIGDevices(t *testing.T) {
	sys := newSystem(t, mockgpu.Options{})
	d := sys.Device(1)
	d.MigMode = nvml.DEVICE_MIG_ENABLE
	migs := []nvml.Device{
		migDevice("MIG-aaaa", "NVIDIA A100-SXM4-40GB MIG 3g.20gb", 1, 0, 20<<30, 5<<30, 4242),
		migDevice("MIG-bbbb", "NVIDIA A100-SXM4-40GB MIG 1g.5gb", 7, 0, 5<<30, 1<<30, 4343),
	}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i < len(migs) {
			return migs[i], nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	g := start(t, sys).Snapshot().GPUs[1]
	if g.MIGEnabled == nil || !*g.MIGEnabled || len(g.MIGDevices) != 2 {
		t.Fatalf("mig: %+v", g)
	}
	m := g.MIGDevices[0]
	if m.UUID != "MIG-aaaa" || m.Profile != "3g.20gb" || *m.GPUInstanceID != 1 || *m.ComputeInstanceID != 0 ||
		*m.MemTotalBytes != 20<<30 || *m.MemUsedBytes != 5<<30 || *m.MemReservedBytes != 1<<20 || m.UtilRatio != nil || m.Error != "" {
		t.Errorf("mig 0: %+v", m)
	}
	if len(m.Processes) != 1 || m.Processes[0].PID != 4242 || m.Processes[0].UsedMemoryBytes != 1<<30 {
		t.Errorf("mig 0 processes: %+v", m.Processes)
	}
	if g.MIGDevices[1].Profile != "1g.5gb" || *g.MIGDevices[1].GPUInstanceID != 7 {
		t.Errorf("mig 1: %+v", g.MIGDevices[1])
	}
}

func migDevice(uuid, name string, gi, ci int, total, used uint64, pid uint32) *mock.Device {
	return &mock.Device{
		GetUUIDFunc:             func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		GetNameFunc:             func() (string, nvml.Return) { return name, nvml.SUCCESS },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED },
		GetMemoryInfo_v2Func: func() (nvml.Memory_v2, nvml.Return) {
			return nvml.Memory_v2{Total: total, Used: used, Reserved: 1 << 20}, nvml.SUCCESS
		},
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return gi, nvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return ci, nvml.SUCCESS },
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			return []nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: 1 << 30}}, nvml.SUCCESS
		},
	}
}

func TestInitFailureIsReportedAndRetried(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(base.UnixNano())
	var attempts atomic.Int32
	sys := newSystem(t, mockgpu.Options{})
	c := collector.New(collector.Config{
		Open: func() (gpu.Library, error) {
			if attempts.Add(1) == 1 {
				return nvmlgpu.Open(&mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }})
			}
			return nvmlgpu.Open(sys, nvmlgpu.WithEventWait(5*time.Millisecond))
		},
		Interval:  time.Hour,
		RetryInit: time.Minute,
		Now:       func() time.Time { return time.Unix(0, now.Load()) },
	})
	err := c.Start(context.Background())
	t.Cleanup(c.Close)
	if !errors.Is(err, gpu.ErrLibraryNotFound) {
		t.Fatalf("Start = %v", err)
	}
	s := c.Snapshot()
	if s.NVML.OK || s.NVML.Error == "" || len(s.GPUs) != 0 || s.GPUs == nil {
		t.Fatalf("snapshot without NVML: %+v", s)
	}
	c.CollectNow() // before RetryInit: no new attempt
	if attempts.Load() != 1 {
		t.Fatalf("retried too early: %d attempts", attempts.Load())
	}
	now.Store(base.Add(2 * time.Minute).UnixNano())
	s = c.CollectNow()
	if !s.NVML.OK || s.NVML.Error != "" || len(s.GPUs) != 8 {
		t.Fatalf("after retry: ok %v error %q gpus %d", s.NVML.OK, s.NVML.Error, len(s.GPUs))
	}
}

func TestBackgroundCollection(t *testing.T) {
	sys := newSystem(t, mockgpu.Options{})
	c := collector.New(collector.Config{
		Open:     func() (gpu.Library, error) { return nvmlgpu.Open(sys, nvmlgpu.WithEventWait(5*time.Millisecond)) },
		Interval: 5 * time.Millisecond,
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := c.Snapshot()
	waitFor(t, "a newer snapshot", func() bool { return c.Snapshot() != first && c.Stats().Cycles >= 3 })
	c.Close()
	n := c.Stats().Cycles
	time.Sleep(20 * time.Millisecond)
	if c.Stats().Cycles != n {
		t.Error("collection continued after Close")
	}
}

// failingHandles makes DeviceByIndex fail (not lost) for one GPU, as a driver error would.
type failingHandles struct {
	gpu.Library
	bad int
}

func (f failingHandles) DeviceByIndex(i int) (gpu.Device, error) {
	if i == f.bad {
		return nil, &gpu.CallError{Func: "nvmlDeviceGetHandleByIndex_v2", Err: errors.New("Unknown Error")}
	}
	return f.Library.DeviceByIndex(i)
}

func TestHandleErrorIsErrorState(t *testing.T) {
	sys := newSystem(t, mockgpu.Options{})
	c := collector.New(collector.Config{
		Open: func() (gpu.Library, error) {
			l, err := nvmlgpu.Open(sys, nvmlgpu.WithEventWait(5*time.Millisecond))
			return failingHandles{Library: l, bad: 4}, err
		},
		Interval: time.Hour,
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s := c.CollectNow()
	for i, g := range s.GPUs {
		switch {
		case i == 4 && (g.State != snapshot.StateError || g.Error == "" || g.UtilRatio != nil):
			t.Errorf("gpu 4: %+v", g)
		case i != 4 && g.State != snapshot.StateUp:
			t.Errorf("gpu %d: %q", i, g.State)
		}
	}
}

// RecentXIDs counts the last 5 minutes' events per code (DCGM_EXP_XID_ERRORS_COUNT's window)
// and forgets older ones; the PCI bus id is read with the identity, in NVML's spelling.
func TestRecentXIDsWindowAndPCIBusID(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC).UnixNano())
	sys := newSystem(t, mockgpu.Options{})
	c := collector.New(collector.Config{
		Open:     func() (gpu.Library, error) { return nvmlgpu.Open(sys, nvmlgpu.WithEventWait(5*time.Millisecond)) },
		Interval: time.Hour, Hostname: "node-1", Now: func() time.Time { return time.Unix(0, now.Load()) },
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitFor(t, "event watcher", func() bool { return c.Stats().EventsWatched })
	sys.InjectXID(3, 43)
	waitFor(t, "1 XID event", func() bool { return c.Stats().XIDEvents == 1 })
	now.Add(int64(4 * time.Minute))
	sys.InjectXID(3, 43)
	sys.InjectXID(3, 79)
	waitFor(t, "3 XID events", func() bool { return c.Stats().XIDEvents == 3 })
	g := c.CollectNow().GPUs[3]
	if g.RecentXIDs["43"] != 2 || g.RecentXIDs["79"] != 1 {
		t.Errorf("within the window: %v", g.RecentXIDs)
	}
	now.Add(int64(2 * time.Minute)) // the first 43 is now 6 minutes old
	if g := c.CollectNow().GPUs[3]; g.RecentXIDs["43"] != 1 || g.RecentXIDs["79"] != 1 || g.XIDErrors["43"] != 2 {
		t.Errorf("after 6 minutes: recent %v, total %v", g.RecentXIDs, g.XIDErrors)
	}
	now.Add(int64(10 * time.Minute))
	if g := c.CollectNow().GPUs[3]; g.RecentXIDs != nil {
		t.Errorf("after the window: %v", g.RecentXIDs)
	}
	if !regexp.MustCompile(`^00000000:[0-9A-F]{2}:00\.0$`).MatchString(g.PCIBusID) {
		t.Errorf("PCI bus id %q", g.PCIBusID)
	}
}
