package gpufields

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
)

func TestMemoryRatio(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name                        string
		used, total, free, reserved float64
		want                        float64
	}{
		{"total known", 36, 40, nan, nan, 0.9},
		{"total known, free ignored", 36, 40, 3, 1, 0.9},
		{"dcgm default: used+free+reserved", 38616, nan, 2000, 400, 38616.0 / 41016},
		{"no reserved field", 36, nan, 4, nan, 0.9},
		{"nothing but used", 36, nan, nan, nan, nan},
		{"no used", nan, 40, 4, nan, nan},
		{"empty card", 0, nan, 0, 0, nan},
	} {
		got := MemoryRatio(c.used, c.total, c.free, c.reserved)
		if math.IsNaN(c.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-c.want) > 1e-12) {
			t.Errorf("%s: MemoryRatio = %v, want %v", c.name, got, c.want)
		}
	}
}

// The example: a card at 96 % of its capacity reads the same whatever fields exist.
func TestMemoryRatioIsOneDefinition(t *testing.T) {
	const total, reserved, used = 40960.0, 410.0, 39322.0
	free := total - used - reserved
	a := MemoryRatio(used, total, nan(), nan())
	b := MemoryRatio(used, nan(), free, reserved)
	if math.Abs(a-b) > 1e-12 {
		t.Fatalf("with FB_TOTAL %v, without %v", a, b)
	}
}

func nan() float64 { return math.NaN() }

func TestTableIsWellFormed(t *testing.T) {
	metricName := regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	seen := map[string]Signal{}
	for _, f := range Fields {
		if len(f.Names) == 0 || f.Title == "" || f.Unit == "" {
			t.Errorf("%s: incomplete field %+v", f.Signal, f)
		}
		if Of(f.Signal).Signal != f.Signal {
			t.Errorf("Of(%s) finds another field", f.Signal)
		}
		for _, n := range f.Names {
			if !metricName.MatchString(n.Metric) {
				t.Errorf("%s: %q is not a metric name", f.Signal, n.Metric)
			}
			// One series set, one signal: the probe's ECC counter is two names told apart by
			// its type label.
			key := n.Metric + fmt.Sprint(n.Matchers)
			if other, dup := seen[key]; dup {
				t.Errorf("%s is a name of both %s and %s", key, other, f.Signal)
			}
			seen[key] = f.Signal
			if n.Scale <= 0 {
				t.Errorf("%s: scale %v", n.Metric, n.Scale)
			}
			if _, ok := f.Lookup(n.Metric); !ok {
				t.Errorf("Lookup(%s) fails", n.Metric)
			}
		}
	}
}

// Units: percent, MiB and MHz names are scaled; ratio, byte and Hz names are not.
func TestScalesFollowTheUnitInTheName(t *testing.T) {
	want := map[string]float64{
		"DCGM_FI_DEV_GPU_UTIL": 0.01, "DCGM_FI_DEV_GPU_UTIL_RATIO": 1,
		"DCGM_FI_DEV_FB_USED": 1 << 20, "DCGM_FI_DEV_FB_USED_BYTES": 1,
		"DCGM_FI_DEV_SM_CLOCK": 1e6, "DCGM_FI_DEV_SM_CLOCK_HERTZ": 1,
		"nv_gpu_utilization": 1, "nv_gpu_memory_used_bytes": 1,
	}
	for _, f := range Fields {
		for _, n := range f.Names {
			if w, ok := want[n.Metric]; ok && n.Scale != w {
				t.Errorf("%s: scale %v, want %v", n.Metric, n.Scale, w)
			}
			if (strings.HasSuffix(n.Metric, "_BYTES") || strings.HasSuffix(n.Metric, "_RATIO") || strings.HasSuffix(n.Metric, "_HERTZ")) && n.Scale != 1 {
				t.Errorf("%s is in base units but scaled by %v", n.Metric, n.Scale)
			}
		}
	}
}

func TestNotMeasuredNamesTheFieldToEnable(t *testing.T) {
	msg := Of(ECCErrors).NotMeasured()
	for _, want := range []string{"not measured", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counters file"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if msg := Of(ClockEvents).NotMeasured(); !strings.Contains(msg, "enable DCGM_FI_DEV_CLOCKS_EVENT_REASONS") {
		t.Errorf("clock events: %q", msg)
	}
	if msg := Of(XID).NotMeasured(); strings.Contains(msg, "enable") {
		t.Errorf("XID is on by default, yet: %q", msg)
	}
}

func TestFoundKeepsTheOrder(t *testing.T) {
	present := map[string]bool{"DCGM_FI_DEV_GPU_UTIL_RATIO": true, "inferscope_gpu_utilization_ratio": true}
	got := Of(Util).Found(func(n string) bool { return present[n] })
	if len(got) != 2 || got[0].Exporter != Probe || got[1].Metric != "DCGM_FI_DEV_GPU_UTIL_RATIO" {
		t.Fatalf("Found = %+v", got)
	}
}
