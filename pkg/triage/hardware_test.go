package triage

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// TestDCGMHardwareThrottleBits evaluates the bitmask decoding with promtool against NVML's
// clock-event bits: only hw_slowdown (0x8), sw_thermal (0x20), hw_thermal (0x40) and
// power brake (0x80) count; idle (0x1), application clocks (0x2), the power cap (0x4), sync
// boost (0x10) and display clocks (0x100) do not. The value is the most hardware bits set at
// once in the window.
func TestDCGMHardwareThrottleBits(t *testing.T) {
	cases := []struct {
		node   string
		values string // one sample a minute from 0m
		want   int    // 0: no result for the node
	}{
		{"idle-and-power-cap", "1 4 5 1 4 5 1 4 5 1 4", 0},
		{"app-clocks-sync-boost-display", "2 16 256 258 274 2 16 256 2 16 256", 0},
		{"hw-slowdown", "0 0 0 0 0 0 8 8 0 0 0", 1},
		{"thermal-and-power-brake", "0 0 0 0 0 224 0 0 0 0 0", 3},
		{"idle-plus-hw-thermal", "65 65 65 65 65 65 65 65 65 65 65", 1},
		{"every-bit", "511 511 511 511 511 511 511 511 511 511 511", 4},
		{"before-the-window", "8 0 0 0 0 0 0 0 0 0 0", 0},
	}
	expr := dcgmHardwareThrottle("Hostname", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "5m")
	var b strings.Builder
	b.WriteString("tests:\n  - interval: 1m\n    input_series:\n")
	for _, c := range cases {
		fmt.Fprintf(&b, "      - series: 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{Hostname=%q, gpu=\"0\"}'\n        values: '%s'\n", c.node, c.values)
	}
	fmt.Fprintf(&b, "    promql_expr_test:\n      - expr: '%s'\n        eval_time: 10m\n        exp_samples:\n", expr)
	for _, c := range cases {
		if c.want > 0 {
			fmt.Fprintf(&b, "          - labels: '{Hostname=%q, reason=\"hw_or_thermal_slowdown\"}'\n            value: %d\n", c.node, c.want)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "throttle.yml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	promtest.RunRuleTests(t, dir, "throttle.yml")
}

// TestHardwareReadingsBothGPUNamings: the scenario's one XID (43, on node-a's GPU 6 as the GPU
// idle incident starts) is read as one XID event in the window around it, none in the hour
// before and none on the other nodes, with no uncorrected ECC error and no hardware throttling
// (the power cap and idle reasons do not count), from the probe's series and from
// dcgm-exporter's alike.
func TestHardwareReadingsBothGPUNamings(t *testing.T) {
	for _, naming := range []string{testbed.GPUNamingInferscope, testbed.GPUNamingDCGM} {
		t.Run(naming, func(t *testing.T) {
			e, s := enginetest.Start(t, enginetest.Profile("triton"), enginetest.GPUNaming(naming))
			in, ok := s.Incident(testbed.GPUIdle)
			if !ok {
				t.Fatal("the scenario has no GPU idle incident")
			}
			from, to := in.Start.Add(-5*time.Minute), in.Start.Add(5*time.Minute)
			rd, err := Read(context.Background(), e, Options{Model: in.Model, From: from, To: to})
			if err != nil {
				t.Fatal(err)
			}
			if len(rd.Instances) < 2 {
				t.Fatalf("%d instances serve %s: want the incident's and another node's", len(rd.Instances), in.Model)
			}
			for _, got := range rd.Instances {
				wantXID := 0.0
				if got.Node == testbed.Node(in.Instance) {
					wantXID = 1
				}
				t.Logf("%s: XID %v → %v, uncorrected ECC %v → %v, throttle %v", got.Name, got.XID.Before, got.XID.Now,
					got.ECCUncorrected.Before, got.ECCUncorrected.Now, got.Throttle)
				if got.XID.Now != wantXID || got.XID.Before != 0 {
					t.Errorf("%s: XID events %v in the window, %v before; want %v and 0", got.Name, got.XID.Now, got.XID.Before, wantXID)
				}
				if got.ECCUncorrected.Now != 0 || got.ECCUncorrected.Before != 0 || math.IsNaN(got.ECCUncorrected.Now) {
					t.Errorf("%s: uncorrected ECC %v → %v, want 0 → 0", got.Name, got.ECCUncorrected.Before, got.ECCUncorrected.Now)
				}
				if len(got.Throttle) > 0 {
					t.Errorf("%s: hardware throttling %v, the scenario has none", got.Name, got.Throttle)
				}
			}
			r := Score(rd, DefaultThresholds())
			hw := cause(t, &r, CauseHardware)
			if hw.Instance != in.Instance || !strings.Contains(hw.Summary, "1 XID event") {
				t.Errorf("hardware cause on %s: %q", hw.Instance, hw.Summary)
			}
		})
	}
}
