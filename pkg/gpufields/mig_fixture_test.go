package gpufields_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// TestMIGFixture: the MIG fixture (dcgm-exporter 4.8 in its default flex mode on a node whose GPU
// 0 is split into three GPU instances) passes promtool but for the exporter's own findings, and
// holds the facts the engine's reading rests on: the partitioned GPU appears only through its
// instances, each series labelled GPU_I_ID and GPU_I_PROFILE; utilisation is written for the
// whole GPU only; device-wide fields repeat the parent GPU's value on every instance (so a sum
// over instances would count them several times); memory is each instance's own, and the one
// memory definition gives each instance's fill — the 1g.10gb instance at 94.9 % while the card's
// instances hold 63 % together.
func TestMIGFixture(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "dcgm-4.8-mig.prom"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range promtest.CheckMetrics(t, b) {
		if !promtest.DCGMCompatible(line) {
			t.Errorf("promtool check metrics: %s", line)
		}
	}
	fams := parseExposition(t, b)
	const mib = 1 << 20
	used, free, reserved := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for name, fam := range fams {
		device := map[string]float64{}
		for _, m := range fam.GetMetric() {
			gpu, _ := label(m, "gpu")
			id, hasID := label(m, "GPU_I_ID")
			_, hasProfile := label(m, "GPU_I_PROFILE")
			if (gpu == "0") != hasID || hasID != hasProfile {
				t.Errorf("%s GPU %s: GPU_I_ID %v, GPU_I_PROFILE %v: the MIG GPU is reported through its instances only", name, gpu, hasID, hasProfile)
			}
			if gpu != "0" {
				continue
			}
			switch name {
			case "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL":
				t.Errorf("%s written for MIG instance %s: dcgm-exporter has none for instances", name, id)
			case "DCGM_FI_DEV_FB_USED":
				used[id] = value(m) * mib
			case "DCGM_FI_DEV_FB_FREE":
				free[id] = value(m) * mib
			case "DCGM_FI_DEV_FB_RESERVED":
				reserved[id] = value(m) * mib
			case "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_XID_ERRORS":
				device[id] = value(m)
			}
		}
		if len(device) > 0 && len(device) != 3 {
			t.Errorf("%s on %d instances, want 3", name, len(device))
		}
		for id, v := range device {
			if v != device["2"] {
				t.Errorf("%s: instance %s %v, instance 2 %v: a device-wide field repeats the GPU's value", name, id, v, device["2"])
			}
		}
	}
	want := map[string]float64{"2": 30720.0 / 40192, "3": 4096.0 / 19968, "9": 9472.0 / 9984}
	var u, all float64
	for id, w := range want {
		got := gpufields.MemoryRatio(used[id], 0, free[id], reserved[id])
		if got != w {
			t.Errorf("instance %s memory %v, want %v", id, got, w)
		}
		u += used[id]
		all += used[id] + free[id] + reserved[id]
	}
	if card := u / all; card > 0.64 || want["9"] < 0.92 {
		t.Errorf("the fixture should show an instance past the 92 %% line (%v) on a card at %v", want["9"], card)
	}
}
