package nvmlgpu

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/inferscope/inferscope/pkg/probe/gpu"
)

// Every symbol the guard checks must be a function NVML's header declares, spelled exactly:
// a typo would make the guard report a present function as missing (or the reverse).
func TestSymbolsAreDeclaredInNVMLHeader(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/NVIDIA/go-nvml").Output()
	if err != nil {
		t.Fatalf("locating go-nvml: %v", err)
	}
	header, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "pkg", "nvml", "nvml.h"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sym := range Symbols() {
		re := regexp.MustCompile(`DECLDIR\s+` + regexp.QuoteMeta(sym) + `\s*\(`)
		if !re.Match(header) {
			t.Errorf("%s is not declared in nvml.h", sym)
		}
	}
}

// Without the library, Open reports it and calls nothing else: the bare moq mock panics on
// any call whose function is not set, so only Init may be reached.
func TestOpenWithoutLibraryCallsNothingElse(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	l, err := Open(lib)
	if l != nil || !errors.Is(err, gpu.ErrLibraryNotFound) {
		t.Fatalf("Open = %v, %v; want ErrLibraryNotFound", l, err)
	}
	if n := len(lib.InitCalls()); n != 1 {
		t.Fatalf("Init called %d times", n)
	}
}

// The real go-nvml binding, pointed at a library that does not exist, fails the same way
// (dlopen fails, no C function is reached).
func TestOpenRealBindingWithoutLibrary(t *testing.T) {
	_, err := Open(nvml.New(nvml.WithLibraryPath(filepath.Join(t.TempDir(), "libnvidia-ml.so.1"))))
	if !errors.Is(err, gpu.ErrLibraryNotFound) {
		t.Fatalf("err = %v; want ErrLibraryNotFound", err)
	}
	if !strings.Contains(err.Error(), "libnvidia-ml.so.1") {
		t.Errorf("error %q does not name the library", err)
	}
}

func openWithout(t *testing.T, srv *dgxa100.Server, missing ...string) *Library {
	t.Helper()
	l, err := Open(srv, WithSymbolLookup(func(name string) error {
		for _, m := range missing {
			if name == m {
				return errors.New("undefined symbol")
			}
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestMissingSymbolIsNeverCalled(t *testing.T) {
	srv := dgxa100.New()
	d0 := srv.Devices[0].(*dgxa100.Device)
	d0.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		t.Error("nvmlDeviceGetPowerUsage called although the guard knows it is missing")
		return 0, nvml.SUCCESS
	}
	l := openWithout(t, srv, "nvmlDeviceGetPowerUsage")
	dev, err := l.DeviceByIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dev.PowerMilliwatts()
	if !errors.Is(err, gpu.ErrSymbolMissing) || !gpu.Absent(err) {
		t.Fatalf("err = %v; want ErrSymbolMissing", err)
	}
	if !strings.Contains(err.Error(), "nvmlDeviceGetPowerUsage") {
		t.Errorf("error %q does not name the function", err)
	}
	if got := l.Missing(); len(got) != 1 || got[0] != "nvmlDeviceGetPowerUsage" {
		t.Errorf("Missing() = %v", got)
	}
}

// An older driver without the renamed or versioned functions gets the older ones.
func TestVersionedFallbacks(t *testing.T) {
	srv := dgxa100.New()
	d0 := srv.Devices[0].(*dgxa100.Device)
	d0.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
		t.Error("clock-event reasons called although missing")
		return 0, nvml.SUCCESS
	}
	d0.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return nvml.ClocksThrottleReasonSwPowerCap, nvml.SUCCESS }
	d0.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
		t.Error("memory v2 called although missing")
		return nvml.Memory_v2{}, nvml.SUCCESS
	}
	d0.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 100, Used: 40, Free: 60}, nvml.SUCCESS }
	l := openWithout(t, srv, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetCount_v2")

	if n, err := l.DeviceCount(); err != nil || n != 8 {
		t.Fatalf("DeviceCount (v1 symbol) = %d, %v", n, err)
	}
	dev, _ := l.DeviceByIndex(0)
	if mask, err := dev.ClockEventReasons(); err != nil || mask != nvml.ClocksThrottleReasonSwPowerCap {
		t.Errorf("ClockEventReasons = %#x, %v", mask, err)
	}
	m, err := dev.Memory()
	if err != nil || m.Total != 100 || m.Used != 40 || m.HasReserved {
		t.Errorf("Memory = %+v, %v; want v1 values without reserved", m, err)
	}
}

// Memory falls back to v1 when the driver rejects the v2 struct version.
func TestMemoryV2VersionMismatchFallsBack(t *testing.T) {
	srv := dgxa100.New()
	d0 := srv.Devices[0].(*dgxa100.Device)
	d0.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) { return nvml.Memory_v2{}, nvml.ERROR_ARGUMENT_VERSION_MISMATCH }
	d0.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 10, Used: 3}, nvml.SUCCESS }
	l := openWithout(t, srv)
	dev, _ := l.DeviceByIndex(0)
	if m, err := dev.Memory(); err != nil || m.Used != 3 || m.HasReserved {
		t.Errorf("Memory = %+v, %v", m, err)
	}
}

func TestReturnCodeMapping(t *testing.T) {
	cases := []struct {
		ret    nvml.Return
		want   error
		absent bool
	}{
		{nvml.ERROR_NOT_SUPPORTED, gpu.ErrNotSupported, true},
		{nvml.ERROR_FUNCTION_NOT_FOUND, gpu.ErrSymbolMissing, true},
		{nvml.ERROR_GPU_IS_LOST, gpu.ErrGPULost, false},
	}
	for _, c := range cases {
		srv := dgxa100.New()
		srv.Devices[0].(*dgxa100.Device).GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, c.ret }
		l := openWithout(t, srv)
		dev, _ := l.DeviceByIndex(0)
		_, err := dev.TemperatureCelsius()
		if !errors.Is(err, c.want) || gpu.Absent(err) != c.absent {
			t.Errorf("return %d: err = %v (absent %v); want %v (absent %v)", c.ret, err, gpu.Absent(err), c.want, c.absent)
		}
	}
	// Any other failure is a plain error naming the function, neither absent nor lost.
	srv := dgxa100.New()
	srv.Devices[0].(*dgxa100.Device).GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	l := openWithout(t, srv)
	dev, _ := l.DeviceByIndex(0)
	_, err := dev.TemperatureCelsius()
	if err == nil || gpu.Absent(err) || errors.Is(err, gpu.ErrGPULost) || !strings.Contains(err.Error(), "nvmlDeviceGetTemperature") {
		t.Errorf("ERROR_UNKNOWN: err = %v", err)
	}
}

func TestProcessesWithUnknownMemory(t *testing.T) {
	srv := dgxa100.New()
	srv.Devices[0].(*dgxa100.Device).GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return []nvml.ProcessInfo{{Pid: 7, UsedGpuMemory: 1 << 30}, {Pid: 8, UsedGpuMemory: ^uint64(0)}}, nvml.SUCCESS
	}
	l := openWithout(t, srv)
	dev, _ := l.DeviceByIndex(0)
	ps, err := dev.Processes()
	if err != nil || len(ps) != 2 {
		t.Fatalf("Processes = %v, %v", ps, err)
	}
	if !ps[0].UsedKnown || ps[0].UsedBytes != 1<<30 || ps[1].UsedKnown || ps[1].UsedBytes != 0 {
		t.Errorf("processes = %+v", ps)
	}
}

func TestWatchEventsWithoutEventSymbolsReturnsAtOnce(t *testing.T) {
	srv := dgxa100.New()
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		t.Error("nvmlEventSetCreate called although missing")
		return nil, nvml.ERROR_UNKNOWN
	}
	l := openWithout(t, srv, "nvmlEventSetCreate")
	dev, _ := l.DeviceByIndex(0)
	err := l.WatchEvents(context.Background(), []gpu.Device{dev}, func(gpu.Event) {})
	if !errors.Is(err, gpu.ErrSymbolMissing) {
		t.Fatalf("err = %v", err)
	}
}

func TestWatchEventsDeliversXIDs(t *testing.T) {
	srv := dgxa100.New()
	var devs []*dgxa100.Device
	for _, d := range srv.Devices {
		devs = append(devs, d.(*dgxa100.Device))
	}
	registered := map[*dgxa100.Device]uint64{}
	events := make(chan nvml.EventData, 4)
	set := &mock.EventSet{
		WaitFunc: func(timeout uint32) (nvml.EventData, nvml.Return) {
			select {
			case ev := <-events:
				return ev, nvml.SUCCESS
			case <-time.After(time.Duration(timeout) * time.Millisecond):
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
		},
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return set, nvml.SUCCESS }
	for i, d := range devs {
		d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) {
			if i == 5 {
				return nvml.EventTypePState, nvml.SUCCESS // no XID support: must not be registered
			}
			return nvml.EventTypeXidCriticalError, nvml.SUCCESS
		}
		d.RegisterEventsFunc = func(types uint64, s nvml.EventSet) nvml.Return {
			registered[d] = types
			return nvml.SUCCESS
		}
	}
	l, err := Open(srv, WithEventWait(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	handles := make([]gpu.Device, len(devs))
	for i := range devs {
		handles[i], _ = l.DeviceByIndex(i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan gpu.Event, 4)
	done := make(chan error, 1)
	go func() { done <- l.WatchEvents(ctx, handles, func(e gpu.Event) { got <- e }) }()

	events <- nvml.EventData{Device: devs[3], EventType: nvml.EventTypeXidCriticalError, EventData: 79}
	events <- nvml.EventData{Device: devs[1], EventType: nvml.EventTypePState, EventData: 1} // not an XID: ignored
	events <- nvml.EventData{Device: devs[6], EventType: nvml.EventTypeXidCriticalError, EventData: 48}
	for _, want := range []gpu.Event{{Device: 3, XID: 79}, {Device: 6, XID: 48}} {
		select {
		case e := <-got:
			if e != want {
				t.Errorf("event = %+v; want %+v", e, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no event delivered")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("WatchEvents = %v", err)
	}
	if len(registered) != 7 {
		t.Errorf("registered %d devices; want 7 (all but the one without XID support)", len(registered))
	}
	for _, types := range registered {
		if types != nvml.EventTypeXidCriticalError {
			t.Errorf("registered types %#x", types)
		}
	}
}
