package mockgpu

import (
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/inferscope/inferscope/pkg/testbed"
)

func TestFromScenario(t *testing.T) {
	s := testbed.Default(testbed.DefaultEnd)
	at := testbed.DefaultEnd.Add(-3 * time.Hour)
	truth := s.GPU("node-a:8000", 1, at)
	a100 := FromScenario(s, DGXA100).GPU("node-a:8000", 1, at)
	if a100.MemTotalBytes != truth.MemTotalBytes || a100.PowerWatts != truth.PowerWatts || a100.UtilRatio != truth.UtilRatio {
		t.Errorf("a100 %+v; scenario %+v", a100, truth)
	}
	h100 := FromScenario(s, DGXH100).GPU("node-a:8000", 1, at)
	if h100.MemTotalBytes != 0 || h100.PowerLimitWatts != 700 || h100.UtilRatio != truth.UtilRatio || h100.MemUsedRatio != truth.MemUsedRatio {
		t.Errorf("h100 %+v", h100)
	}
	// GPUs beyond the scenario's repeat its GPUs.
	if g := FromScenario(s, DGXA100).GPU("node-a:8000", 9, at); g.Lost || g.UtilRatio != truth.UtilRatio {
		t.Errorf("gpu 9: %+v", g)
	}
	if _, err := ScenarioInstance(s, "node-q:1"); err == nil {
		t.Error("unknown instance accepted")
	}
	if in, err := ScenarioInstance(s, ""); err != nil || in != s.Instances()[0] {
		t.Errorf("default instance %q, %v", in, err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("no clock accepted")
	}
	clock := ClockFunc(func(string, int, time.Time) State { return State{} })
	if _, err := New(Options{System: "dgx1", Clock: clock}); err == nil {
		t.Error("unknown system accepted")
	}
}

// The probe's calls reach the Func fields without moq recording them (a long-running mock
// would otherwise grow without bound).
func TestViewDoesNotRecordCalls(t *testing.T) {
	clock := ClockFunc(func(string, int, time.Time) State { return State{TempCelsius: 55} })
	sys, err := New(Options{Clock: clock, GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	h, ret := sys.DeviceGetHandleByIndex(1)
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	for i := 0; i < 100; i++ {
		if v, ret := h.GetTemperature(nvml.TEMPERATURE_GPU); v != 55 || ret != nvml.SUCCESS {
			t.Fatalf("temperature %d, %v", v, ret)
		}
	}
	if n := len(sys.Device(1).GetTemperatureCalls()); n != 0 {
		t.Errorf("moq recorded %d calls", n)
	}
	// A Func left nil answers NOT_SUPPORTED instead of panicking.
	sys.Device(1).GetPowerUsageFunc = nil
	if _, ret := h.GetPowerUsage(); ret != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("nil func: %v", ret)
	}
	if uuid, _ := h.GetUUID(); uuid != UUIDFor(DGXA100, "", 1) {
		t.Errorf("uuid %q", uuid)
	}
}
