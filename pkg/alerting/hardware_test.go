package alerting

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
)

// Clock-event history for the throttle rule's tests, as NVML's bitmask per minute: a hardware
// slowdown that flickers for a minute (not a page), an hour of reasons that are normal operation
// (idle, application clocks, the power cap, sync boost, display clocks), then each hardware reason
// in turn for ten minutes — HW slowdown beside the power cap, SW thermal, HW thermal, power brake.
const (
	flickerAt  = 100
	normalAt   = 150
	hardwareAt = 300 // then every 30 min, one reason each
	held       = 10  // minutes each hardware reason stays active
)

var hardwareSteps = []uint64{0x8 | 0x4, 0x20, 0x40, 0x80}

func clockMask(m int) uint64 {
	switch {
	case m >= flickerAt && m < flickerAt+1:
		return 0x8
	case m >= normalAt && m < normalAt+60:
		return []uint64{0x1, 0x2, 0x4, 0x5, 0x10, 0x100, 0x117}[m%7]
	}
	for i, mask := range hardwareSteps {
		if at := hardwareAt + 30*i; m >= at && m < at+held {
			return mask
		}
	}
	return 0x1 // idle between the steps
}

// clocksDCGM is dcgm-exporter's clock-event bitmask in one version's naming (the deprecated
// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS before 4.8, DCGM_FI_DEV_CLOCKS_EVENT_REASONS since).
type clocksDCGM struct {
	node string
	ver  gpufields.Version
}

func (g clocksDCGM) write(n int) []series {
	name, ok := gpufields.DCGMName(gpufields.ClockEvents, g.ver)
	if !ok {
		panic("no clock-event field in " + string(g.ver))
	}
	vl := gpufields.Labels(g.ver)
	l := map[string]string{"gpu": "0", vl.UUID: "GPU-" + g.node, vl.Node: g.node, "instance": g.node + ":9400", "job": "dcgm"}
	return []series{{labelText(name.Metric, l), samples(n, func(m int) float64 { return float64(clockMask(m)) })}}
}

// clocksProbe is the probe's gauge per clock-event reason (1 while active).
type clocksProbe struct{ node string }

func (g clocksProbe) write(n int) []series {
	l := map[string]string{"gpu": "0", "uuid": "GPU-" + g.node + "-0", "instance": g.node + ":9835", "job": "inferscope-probe", "node": g.node}
	var out []series
	for _, r := range snapshot.ThrottleReasonNames {
		out = append(out, series{labelText("inferscope_gpu_clock_event_reason_active", with(l, "reason", r.Name)), samples(n, func(m int) float64 {
			if clockMask(m)&r.Bit != 0 {
				return 1
			}
			return 0
		})})
	}
	return out
}

// TestPromtoolClocksHeldDown: the throttle rule fires after its 2-minute hold for each hardware
// reason (HW slowdown, SW thermal, HW thermal, power brake), in the probe's per-reason gauges
// and in dcgm-exporter's bitmask under both names of field 112, and never for the reasons that
// are normal operation (idle, application clocks, the power cap — alone or beside each other)
// nor for a one-minute flicker; a GPU without clock-event series reads nothing, not 0.
func TestPromtoolClocksHeldDown(t *testing.T) {
	p := testParams()
	fleet := []interface{ write(int) []series }{
		server("node-a:8000", "recsys"), svc("node-a:8000", "recsys", always(steady)...),
		busyGPU("node-a", 0, 0.5), clocksProbe{"node-a"},
		dcgmMemOnly{"node-n2"}, // dcgm-exporter without the (off by default) clock-event field
	}
	nodes := []string{"node-a"}
	for _, v := range gpufields.DCGMVersions {
		g := clocksDCGM{node: "dcgm-" + string(v), ver: v}
		fleet = append(fleet, g)
		nodes = append(nodes, g.node)
	}
	b, err := newBuilder(p)
	if err != nil {
		t.Fatal(err)
	}
	count := b.hardwareThrottle()
	firing := `count by (inferscope_node, gpu) (ALERTS{alertname="InferscopeGPUClocksHeldDown",alertstate="firing"})`
	each := func(v float64) []expSample {
		var out []expSample
		for _, n := range nodes {
			out = append(out, expSample{fmt.Sprintf(`{inferscope_node=%q, gpu="0"}`, n), v})
		}
		return out
	}
	cases := []promqlCase{
		// The flicker counts while it lasts and never fires.
		{Expr: count, EvalTime: evalAt(flickerAt), ExpSamples: each(1)},
		{Expr: firing, EvalTime: evalAt(flickerAt + 1)},
		{Expr: firing, EvalTime: evalAt(flickerAt + 3)},
		// The GPU without the field is not measured: it has no value at all.
		{Expr: `count(` + count + `)`, EvalTime: evalAt(normalAt), ExpSamples: []expSample{{"{}", float64(len(nodes))}}},
	}
	// Normal operation reads 0 and never fires.
	for m := normalAt; m < normalAt+60; m += 7 {
		for k := 0; k < 7; k++ {
			cases = append(cases, promqlCase{Expr: count, EvalTime: evalAt(m + k), ExpSamples: each(0)})
		}
	}
	cases = append(cases, promqlCase{Expr: `count(ALERTS{alertname="InferscopeGPUClocksHeldDown"})`, EvalTime: evalAt(normalAt + 59)})
	for i := range hardwareSteps {
		at := hardwareAt + 30*i
		cases = append(cases,
			promqlCase{Expr: count, EvalTime: evalAt(at), ExpSamples: each(1)},
			promqlCase{Expr: firing, EvalTime: evalAt(at + 1)}, // pending: held for 2 minutes first
			promqlCase{Expr: firing, EvalTime: evalAt(at + 2), ExpSamples: each(1)},
			promqlCase{Expr: firing, EvalTime: evalAt(at + held - 1), ExpSamples: each(1)},
			promqlCase{Expr: firing, EvalTime: evalAt(at + held)},
		)
	}
	at := hardwareAt + 5
	ann := gpuAnnotations(p, "gpu-throttle-p1", at, "node-a", 0, "clocks held down by the hardware (thermal, power brake or HW slowdown) for 2m",
		"1 hardware clock-event reasons active", 1000.0/60, "recsys v1; ")
	runPromtool(t, p, []promtoolTest{
		{Name: "hardware clock-event reasons in every naming", fleet: fleet, PromqlTest: cases},
		{
			Name:  "clocks held down: the alert's context",
			fleet: []interface{ write(int) []series }{server("node-a:8000", "recsys"), svc("node-a:8000", "recsys", always(steady)...), busyGPU("node-a", 0, 0.5), clocksProbe{"node-a"}},
			AlertRuleTest: []alertCase{
				{EvalTime: evalAt(normalAt + 30), Alertname: "InferscopeGPUClocksHeldDown", ExpAlerts: []expAlert{}},
				{EvalTime: evalAt(at), Alertname: "InferscopeGPUClocksHeldDown", ExpAlerts: []expAlert{{gpuLabels(p, "gpu-throttle-p1", "node-a", 0), ann}}},
			},
		},
	})
}

// Uncorrected ECC history: the volatile count holds 2 errors from before the history, a storm of
// corrected errors runs throughout; one uncorrected error at eccFirst; the exporter is down for
// 15 minutes from eccGap and comes back with the same count; at eccRelabel it is scraped under
// a new target (another instance label) with the same count; the GPU is reset at eccReset (the
// volatile counts drop to 0) and one more uncorrected error follows at eccAfterReset.
const (
	eccFirst      = 100
	eccGap        = 200
	eccRelabel    = 260
	eccReset      = 320
	eccAfterReset = 400
)

func eccCount(m int) float64 {
	switch {
	case m >= eccAfterReset:
		return 1
	case m >= eccReset:
		return 0
	case m >= eccGap && m < eccGap+15:
		return math.NaN()
	case m >= eccFirst:
		return 3
	}
	return 2
}

// eccSeries writes the count (and the corrected count beside it) on one exporter target; the
// target's instance changes at eccRelabel.
func eccSeries(n int, metric, corrected string, uncorrectedL, correctedL map[string]string, instance func(port string) string) []series {
	before := func(f func(int) float64) func(int) float64 {
		return func(m int) float64 {
			if m >= eccRelabel {
				return math.NaN()
			}
			return f(m)
		}
	}
	after := func(f func(int) float64) func(int) float64 {
		return func(m int) float64 {
			if m < eccRelabel {
				return math.NaN()
			}
			return f(m)
		}
	}
	storm := func(m int) float64 {
		if math.IsNaN(eccCount(m)) {
			return math.NaN() // the exporter is down
		}
		return float64(50 * m)
	}
	return []series{
		{labelText(metric, with(uncorrectedL, "instance", instance("a"))), samples(n, before(eccCount))},
		{labelText(metric, with(uncorrectedL, "instance", instance("b"))), samples(n, after(eccCount))},
		{labelText(corrected, with(correctedL, "instance", instance("a"))), samples(n, before(storm))},
		{labelText(corrected, with(correctedL, "instance", instance("b"))), samples(n, after(storm))},
	}
}

// eccDCGM is dcgm-exporter's volatile DBE and SBE totals (off by default) in one version's labels.
type eccDCGM struct {
	node string
	ver  gpufields.Version
}

func (g eccDCGM) write(n int) []series {
	vl := gpufields.Labels(g.ver)
	l := map[string]string{"gpu": "0", vl.UUID: "GPU-" + g.node, vl.Node: g.node, "job": "dcgm"}
	ports := map[string]string{"a": ":9400", "b": ":9401"}
	return eccSeries(n, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", l, l, func(k string) string { return g.node + ports[k] })
}

// eccProbe is the probe's ECC counter by type.
type eccProbe struct{ node string }

func (g eccProbe) write(n int) []series {
	l := map[string]string{"gpu": "0", "uuid": "GPU-" + g.node + "-0", "job": "inferscope-probe", "node": g.node}
	ports := map[string]string{"a": ":9835", "b": ":9836"}
	return eccSeries(n, "inferscope_gpu_ecc_errors_total", "inferscope_gpu_ecc_errors_total", with(l, "type", "uncorrected"), with(l, "type", "corrected"),
		func(k string) string { return g.node + ports[k] })
}

// TestPromtoolUncorrectedECC: one uncorrected ECC error fires the ECC rule at once for the
// XID window (10 min), in the probe's counter and in dcgm-exporter's DBE total of every version's
// labels; corrected errors never do; neither does the exporter coming back after a gap with the
// count it had, nor the same count scraped under a new target, nor the GPU's reset dropping the
// count to 0 — a new error after the reset fires again. A GPU without ECC series reads nothing.
func TestPromtoolUncorrectedECC(t *testing.T) {
	p := testParams()
	fleet := []interface{ write(int) []series }{
		server("node-a:8000", "recsys"), svc("node-a:8000", "recsys", always(steady)...),
		busyGPU("node-a", 0, 0.5), eccProbe{"node-a"},
		dcgmMemOnly{"node-n2"},
	}
	nodes := []string{"node-a"}
	for _, v := range gpufields.DCGMVersions {
		g := eccDCGM{node: "dcgm-" + string(v), ver: v}
		fleet = append(fleet, g)
		nodes = append(nodes, g.node)
	}
	b, err := newBuilder(p)
	if err != nil {
		t.Fatal(err)
	}
	count := b.eccErrors(p.XIDWindow)
	firing := `count by (inferscope_node, gpu) (ALERTS{alertname="InferscopeGPUUncorrectedECC",alertstate="firing"})`
	each := func(v float64) []expSample {
		var out []expSample
		for _, n := range nodes {
			out = append(out, expSample{fmt.Sprintf(`{inferscope_node=%q, gpu="0"}`, n), v})
		}
		return out
	}
	var cases []promqlCase
	for _, e := range []int{eccFirst, eccAfterReset} {
		cases = append(cases,
			promqlCase{Expr: count, EvalTime: evalAt(e - 1), ExpSamples: each(0)},
			promqlCase{Expr: firing, EvalTime: evalAt(e - 1)},
			promqlCase{Expr: firing, EvalTime: evalAt(e), ExpSamples: each(1)},
			promqlCase{Expr: firing, EvalTime: evalAt(e + 9), ExpSamples: each(1)},
			promqlCase{Expr: firing, EvalTime: evalAt(e + 10)},
		)
	}
	// Whatever the exporter does between the two errors is no error: not one alert from the
	// first one's end to the second.
	for m := eccFirst + 10; m < eccAfterReset; m++ {
		cases = append(cases, promqlCase{Expr: `count(ALERTS{alertname="InferscopeGPUUncorrectedECC"})`, EvalTime: evalAt(m)})
	}
	cases = append(cases, promqlCase{Expr: `count(` + count + `)`, EvalTime: evalAt(eccFirst), ExpSamples: []expSample{{"{}", float64(len(nodes))}}})

	at := eccFirst + 5
	ann := gpuAnnotations(p, "gpu-ecc-p1", at, "node-a", 0, "uncorrected ECC errors in the last 10m: 1", "1 uncorrected ECC errors", 1000.0/60, "recsys v1; ")
	runPromtool(t, p, []promtoolTest{
		{Name: "uncorrected ECC errors in every naming", fleet: fleet, PromqlTest: cases},
		{
			Name:  "uncorrected ECC: the alert's context",
			fleet: []interface{ write(int) []series }{server("node-a:8000", "recsys"), svc("node-a:8000", "recsys", always(steady)...), busyGPU("node-a", 0, 0.5), eccProbe{"node-a"}},
			AlertRuleTest: []alertCase{
				{EvalTime: evalAt(eccFirst - 1), Alertname: "InferscopeGPUUncorrectedECC", ExpAlerts: []expAlert{}},
				{EvalTime: evalAt(at), Alertname: "InferscopeGPUUncorrectedECC", ExpAlerts: []expAlert{{gpuLabels(p, "gpu-ecc-p1", "node-a", 0), ann}}},
			},
		},
	})
}

// A rule whose signal is not exported says what to enable; the names are those of gpufields.
func TestHardwareRulesNotMeasured(t *testing.T) {
	p := Defaults()
	p.SetPresent(map[string]bool{"DCGM_FI_DEV_FB_USED": true, "DCGM_FI_DEV_GPU_UTIL": true, "DCGM_FI_DEV_XID_ERRORS": true, "inference_requests_total": true})
	rules, err := Catalog(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"gpu-throttle-p1": "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gpu-ecc-p1": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}
	for _, r := range rules {
		if field, ok := want[r.ID]; ok && (!strings.Contains(r.NotMeasured, "not measured") || !strings.Contains(r.NotMeasured, "enable "+field)) {
			t.Errorf("%s on dcgm-exporter's default counters: %q", r.ID, r.NotMeasured)
		}
		delete(want, r.ID)
	}
	if len(want) > 0 {
		t.Errorf("not in the catalog: %v", want)
	}
	// Either name of field 112, or the probe's gauges, is enough; so is either ECC name.
	for _, present := range []map[string]bool{
		{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": true, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": true},
		{"inferscope_gpu_clock_event_reason_active": true, "inferscope_gpu_ecc_errors_total": true},
	} {
		p.SetPresent(present)
		rules, _ := Catalog(p)
		for _, r := range rules {
			if (r.ID == "gpu-throttle-p1" || r.ID == "gpu-ecc-p1") && r.NotMeasured != "" {
				t.Errorf("%s with %v: %q", r.ID, present, r.NotMeasured)
			}
		}
	}
	// Triton's own GPU metrics have neither field: the rules cannot be rendered for that naming.
	p = Defaults()
	p.GPUNaming = GPUNamingTriton
	rules, _ = Catalog(p)
	for _, r := range rules {
		if (r.ID == "gpu-throttle-p1" || r.ID == "gpu-ecc-p1") && r.Unavailable == "" {
			t.Errorf("%s available with Triton's GPU names", r.ID)
		}
	}
}
