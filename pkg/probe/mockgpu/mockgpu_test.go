package mockgpu

import (
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

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
