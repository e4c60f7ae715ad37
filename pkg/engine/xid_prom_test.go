package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// XIDs as real exporters write them, on a real Prometheus: each node plays one form, with XID
// events at known times, and every window must count each event exactly once.
//
//	node        form                                                   events (minutes from t0)
//	labelled    dcgm-exporter since 2024: DCGM_FI_DEV_XID_ERRORS with    43 at 30, 79 at 60, 43 at 90
//	            err_code/err_msg, a new series per code
//	unlabelled  an older dcgm-exporter: one series holding the last code 43 at 30, 79 at 60, 43 at 90
//	counted     DCGM_EXP_XID_ERRORS_COUNT{xid, window_size_in_ms}:      13 at 30, 13 at 31, 13 at 60
//	            events of the last 5 minutes
//	quiet       dcgm-exporter, no XID yet (err_code "0")                 none
//	absent      GPU utilisation only: XID is not measured there          –
//
// Events sit 7 s after the minute, samples every 15 s from t0.

var xidT0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

func xidHistory() string {
	const step, end = 15, 120 * 60 // seconds
	at := func(min int) int { return min*60 + 7 }
	codeAt := func(s int) int { // the last code of the gauges at second s
		switch {
		case s >= at(90):
			return 43
		case s >= at(60):
			return 79
		case s >= at(30):
			return 43
		}
		return 0
	}
	counted := []int{at(30), at(31), at(60)}
	var b strings.Builder
	labels := func(node string) string {
		return fmt.Sprintf(`gpu="0",UUID="GPU-%s",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="%s",DCGM_FI_DRIVER_VERSION="550.54.15"`, node, node)
	}
	ts := func(s int) float64 { return float64(xidT0.Unix() + int64(s)) }
	b.WriteString("# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n")
	msg := map[int]string{0: "No Error", 43: "Reset Channel Verif Error", 79: "GPU has fallen off the bus"}
	// A series ends where its code does; OpenMetrics wants each series' samples together.
	for _, code := range []int{0, 43, 79} {
		for s := 0; s <= end; s += step {
			if codeAt(s) == code {
				fmt.Fprintf(&b, "DCGM_FI_DEV_XID_ERRORS{%s,err_code=\"%d\",err_msg=\"%s\"} %d %.0f\n", labels("labelled"), code, msg[code], code, ts(s))
			}
		}
	}
	for s := 0; s <= end; s += step {
		fmt.Fprintf(&b, "DCGM_FI_DEV_XID_ERRORS{%s} %d %.0f\n", labels("unlabelled"), codeAt(s), ts(s))
	}
	for s := 0; s <= end; s += step {
		fmt.Fprintf(&b, "DCGM_FI_DEV_XID_ERRORS{%s,err_code=\"0\",err_msg=\"No Error\"} 0 %.0f\n", labels("quiet"), ts(s))
	}
	b.WriteString("# TYPE DCGM_EXP_XID_ERRORS_COUNT gauge\n")
	for s := 0; s <= end; s += step {
		n := 0
		for _, e := range counted {
			if e > s-300 && e <= s {
				n++
			}
		}
		fmt.Fprintf(&b, "DCGM_EXP_XID_ERRORS_COUNT{%s,xid=\"13\",window_size_in_ms=\"300000\"} %d %.0f\n", labels("counted"), n, ts(s))
	}
	b.WriteString("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n")
	for _, node := range []string{"labelled", "unlabelled", "counted", "quiet", "absent"} {
		for s := 0; s <= end; s += step {
			fmt.Fprintf(&b, "DCGM_FI_DEV_GPU_UTIL{%s} 50 %.0f\n", labels(node), ts(s))
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

func startXIDBed(t *testing.T) *Engine {
	t.Helper()
	srv := promtest.StartWithHistory(t, xidHistory(), promtest.Options{})
	c, err := prom.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	names, err := c.LabelValues(context.Background(), "__name__", nil, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	return &Engine{Prom: c, Present: present}
}

func TestXIDsCountedOncePerEventInEveryExporterForm(t *testing.T) {
	e := startXIDBed(t)
	min := func(m int) time.Time { return xidT0.Add(time.Duration(m) * time.Minute) }
	nodes := []string{"labelled", "unlabelled", "counted", "quiet", "absent"}
	nan := math.NaN()
	for _, c := range []struct {
		name     string
		from, to int // minutes
		before   time.Duration
		want     map[string][2]float64 // node → {before, now}
	}{
		{"the first two events", 20, 70, 10 * time.Minute, map[string][2]float64{
			"labelled": {0, 2}, "unlabelled": {0, 2}, "counted": {0, 3}, "quiet": {0, 0}, "absent": {nan, nan}}},
		{"a code seen before comes back", 85, 95, 30 * time.Minute, map[string][2]float64{
			"labelled": {1, 1}, "unlabelled": {1, 1}, "counted": {1, 0}, "quiet": {0, 0}, "absent": {nan, nan}}},
		{"no event", 100, 115, 5 * time.Minute, map[string][2]float64{
			"labelled": {0, 0}, "unlabelled": {0, 0}, "counted": {0, 0}, "quiet": {0, 0}, "absent": {nan, nan}}},
		{"a long window", 10, 118, 10 * time.Minute, map[string][2]float64{
			"labelled": {0, 3}, "unlabelled": {0, 3}, "counted": {0, 3}, "quiet": {0, 0}, "absent": {nan, nan}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hw, err := e.Reader().HardwareReadings(context.Background(), HardwareQuery{Nodes: nodes, From: min(c.from), To: min(c.to), Before: c.before})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range nodes {
				h, want := hw.Nodes[n], c.want[n]
				if !same(h.XIDBefore, want[0]) || !same(h.XIDNow, want[1]) {
					t.Errorf("%s: XID %v before, %v in the window; want %v and %v", n, h.XIDBefore, h.XIDNow, want[0], want[1])
				}
				if !math.IsNaN(h.ECCNow) || !math.IsNaN(h.CorrectedNow) || h.ThrottleMeasured {
					t.Errorf("%s: ECC %v, corrected %v, throttle measured %v: none is exported", n, h.ECCNow, h.CorrectedNow, h.ThrottleMeasured)
				}
			}
			if len(hw.NotMeasured) != 3 || !strings.Contains(hw.NotMeasured[0], "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL") ||
				!strings.Contains(hw.NotMeasured[1], "DCGM_FI_DEV_CLOCKS_EVENT_REASONS") || !strings.Contains(hw.NotMeasured[2], "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL") {
				t.Errorf("not measured: %q", hw.NotMeasured)
			}
		})
	}
}

func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
