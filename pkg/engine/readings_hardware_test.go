package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/pkg/probe/snapshot"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// TestHardwareThrottleExpressions evaluates the throttle readings of both namings with promtool
// against NVML's clock-event bits: only hw_slowdown (0x8), sw_thermal_slowdown (0x20),
// hw_thermal_slowdown (0x40) and hw_power_brake_slowdown (0x80) count; idle (0x1), application
// clocks (0x2), the power cap (0x4), sync boost (0x10) and display clocks (0x100) do not, nor does
// a reason that ended before the window. dcgm-exporter's bitmask gives the most hardware bits set
// at once; the probe's per-reason gauges give each hardware reason.
func TestHardwareThrottleExpressions(t *testing.T) {
	hardware := []string{"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
	dcgm := []struct {
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
	var in, dcgmWant, probeWant strings.Builder
	for _, c := range dcgm {
		fmt.Fprintf(&in, "      - series: 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{Hostname=%q, gpu=\"0\"}'\n        values: '%s'\n", c.node, c.values)
		if c.want > 0 {
			fmt.Fprintf(&dcgmWant, "          - labels: '{Hostname=%q, reason=\"hw_or_thermal_slowdown\"}'\n            value: %d\n", c.node, c.want)
		}
	}
	// The probe: one node per reason with that reason active throughout, and one whose hardware
	// slowdown ended before the window.
	for _, r := range snapshot.ThrottleReasonNames {
		fmt.Fprintf(&in, "      - series: 'inferscope_gpu_clock_event_reason_active{node=%q, gpu=\"0\", reason=%q}'\n        values: '1x10'\n", r.Name, r.Name)
		if slices.Contains(hardware, r.Name) {
			fmt.Fprintf(&probeWant, "          - labels: '{node=%q, reason=%q}'\n            value: 1\n", r.Name, r.Name)
		}
	}
	in.WriteString("      - series: 'inferscope_gpu_clock_event_reason_active{node=\"ended\", gpu=\"0\", reason=\"hw_slowdown\"}'\n        values: '1 0 0 0 0 0 0 0 0 0 0'\n")
	probeSel, err := prom.Selector("inferscope_gpu_clock_event_reason_active", prom.In("reason", HardwareThrottleReasons()...))
	if err != nil {
		t.Fatal(err)
	}
	file := "tests:\n  - interval: 1m\n    input_series:\n" + in.String() + "    promql_expr_test:\n" +
		fmt.Sprintf("      - expr: '%s'\n        eval_time: 10m\n        exp_samples:\n", dcgmHardwareThrottle("Hostname", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "5m")) + dcgmWant.String() +
		fmt.Sprintf("      - expr: '%s'\n        eval_time: 10m\n        exp_samples:\n", probeHardwareThrottle("node", probeSel, "5m")) + probeWant.String()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "throttle.yml"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	promtest.RunRuleTests(t, dir, "throttle.yml")
}
