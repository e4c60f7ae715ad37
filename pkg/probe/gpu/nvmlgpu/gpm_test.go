package nvmlgpu

import (
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/inferscope/inferscope/pkg/probe/gpu"
)

// A driver older than the GPU performance monitor (no nvmlGpmMetricsGet) is never asked: the
// activity is absent, and nothing reaches the mock's unset GPM functions (which would panic).
func TestActivityWithoutGPMSymbolsIsAbsent(t *testing.T) {
	l := openWithout(t, dgxa100.New(), "nvmlGpmMetricsGet")
	dev, err := l.DeviceByIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dev.Activity()
	if !errors.Is(err, gpu.ErrSymbolMissing) || !gpu.Absent(err) {
		t.Fatalf("err = %v; want ErrSymbolMissing", err)
	}
}

// Support is asked once; a GPU without GPM answers ErrNotSupported from then on without
// allocating samples.
func TestActivityOnAGPUWithoutGPM(t *testing.T) {
	srv := dgxa100.New()
	d0 := srv.Devices[0].(*dgxa100.Device)
	asked := 0
	d0.GpmQueryDeviceSupportFunc = func() (nvml.GpmSupport, nvml.Return) {
		asked++
		return nvml.GpmSupport{IsSupportedDevice: 0}, nvml.SUCCESS
	}
	srv.GpmSampleAllocFunc = func() (nvml.GpmSample, nvml.Return) {
		t.Error("a sample was allocated on a GPU without GPM")
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	l := openWithout(t, srv)
	dev, err := l.DeviceByIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := dev.Activity(); !errors.Is(err, gpu.ErrNotSupported) {
			t.Fatalf("err = %v; want ErrNotSupported", err)
		}
	}
	if asked != 1 {
		t.Errorf("support asked %d times; want once", asked)
	}
}
