package alerting

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/gpufields"
)

// XID history for the rule tests: each GPU sees XID 43 at minute xidA, 79 at xidB and 43 again
// at xidC, written as each exporter writes them.
const (
	xidA = 100
	xidB = 200
	xidC = 300
)

var xidEvents = []struct {
	at   int
	code uint64
}{{xidA, 43}, {xidB, 79}, {xidC, 43}}

// xidGauge is dcgm-exporter's last-value XID field in one version's naming: with err_code and
// err_msg labels (each code its own series, present while it is the last code; "0" before the
// first event), or, as before 3.4.2, one series whose value is the last code.
type xidGauge struct {
	node     string
	ver      gpufields.Version
	labelled bool
}

func (g xidGauge) write(n int) []series {
	name, ok := gpufields.Of(gpufields.XID).DCGMShape(g.ver, gpufields.LastValue)
	if !ok {
		panic("no XID gauge in " + string(g.ver))
	}
	vl := gpufields.Labels(g.ver)
	base := map[string]string{"gpu": "0", vl.UUID: "GPU-" + g.node, vl.Node: g.node, "instance": g.node + ":9400", "job": "dcgm"}
	last := func(m int) uint64 {
		code := uint64(0)
		for _, e := range xidEvents {
			if m >= e.at {
				code = e.code
			}
		}
		return code
	}
	if !g.labelled {
		return []series{{labelText(name.Metric, base), samples(n, func(m int) float64 { return float64(last(m)) })}}
	}
	var out []series
	for _, code := range []uint64{0, 43, 79} {
		l := with(base, vl.XIDCode, strconv.FormatUint(code, 10), vl.XIDMessage, gpufields.XIDMessage(code))
		out = append(out, series{labelText(name.Metric, l), samples(n, func(m int) float64 {
			if last(m) != code {
				return math.NaN()
			}
			return float64(code)
		})})
	}
	return out
}

// xidWindowed is DCGM_EXP_XID_ERRORS_COUNT: per code, the events of the last 5 minutes (the
// exporter's default window), a series from the code's first event on.
type xidWindowed struct {
	node string
	ver  gpufields.Version
}

func (g xidWindowed) write(n int) []series {
	name, _ := gpufields.Of(gpufields.XID).DCGMShape(g.ver, gpufields.WindowCount)
	vl := gpufields.Labels(g.ver)
	var out []series
	for _, code := range []uint64{43, 79} {
		l := map[string]string{"gpu": "0", vl.UUID: "GPU-" + g.node, vl.Node: g.node, "instance": g.node + ":9400", "job": "dcgm",
			vl.XID: strconv.FormatUint(code, 10), gpufields.WindowLabel: strconv.Itoa(gpufields.DefaultWindow)}
		out = append(out, series{labelText(name.Metric, l), samples(n, func(m int) float64 {
			v, seen := 0.0, false
			for _, e := range xidEvents {
				if e.code == code && m >= e.at {
					seen = true
					if m < e.at+gpufields.DefaultWindow/60000 {
						v++
					}
				}
			}
			if !seen {
				return math.NaN()
			}
			return v
		})})
	}
	return out
}

// xidProbe is the probe's counter by code (its series born with the code's first event) on a
// GPU the probe watches.
type xidProbe struct{ node string }

func (g xidProbe) write(n int) []series {
	l := map[string]string{"gpu": "0", "uuid": "GPU-" + g.node + "-0", "instance": g.node + ":9835", "job": "inferscope-probe", "node": g.node}
	var out []series
	for _, code := range []uint64{43, 79} {
		out = append(out, series{labelText("inferscope_gpu_xid_errors_total", with(l, "xid", strconv.FormatUint(code, 10))), samples(n, func(m int) float64 {
			c, seen := 0.0, false
			for _, e := range xidEvents {
				if e.code == code && m >= e.at {
					c, seen = c+1, true
				}
			}
			if !seen {
				return math.NaN()
			}
			return c
		})})
	}
	return out
}

// TestPromtoolXIDEveryFormAndVersion: one XID event is one firing of the XID rule and counts
// 1, in every form an exporter writes it — the probe's counter, dcgm-exporter's last-value
// field with err_code/err_msg (each code a new series, a code that comes back counted again)
// and without them, and DCGM_EXP_XID_ERRORS_COUNT — in each dcgm-exporter version's naming; a
// GPU with XID series and no event reads 0 and stays quiet; a GPU without XID series reads
// nothing (not 0) and stays quiet.
func TestPromtoolXIDEveryFormAndVersion(t *testing.T) {
	p := testParams()
	fleet := []interface{ write(int) []series }{
		server("node-a:8000", "recsys"), svc("node-a:8000", "recsys", always(steady)...),
		busyGPU("node-a", 0, 0.5), xidProbe{"node-a"},
		busyGPU("node-q", 0, 0.5), // the probe watches it: XID measured, none happened
	}
	var nodes []string
	for _, v := range gpufields.DCGMVersions {
		g := xidGauge{node: "gauge-" + string(v), ver: v, labelled: true}
		w := xidWindowed{node: "windowed-" + string(v), ver: v}
		fleet = append(fleet, g, w)
		nodes = append(nodes, g.node, w.node)
	}
	old := xidGauge{node: "gauge-unlabelled", ver: gpufields.DCGM3}
	fleet = append(fleet, old)
	nodes = append(nodes, old.node, "node-a")
	// node-n2 has GPU readings from dcgm-exporter but no XID series at all (its counters file
	// leaves the field out): not measured.
	fleet = append(fleet, dcgmMemOnly{"node-n2"})

	b, err := newBuilder(p)
	if err != nil {
		t.Fatal(err)
	}
	count := b.xidEvents(p.XIDWindow)
	firing := `count by (inferscope_node, gpu) (ALERTS{alertname="InferscopeGPUXID",alertstate="firing"})`
	// expect: the nodes with XID series get v, node-q (watched, no event) 0; before the first
	// event the windowed counts have no series yet.
	expect := func(v float64, firstEvent bool) []expSample {
		var out []expSample
		for _, n := range nodes {
			if firstEvent && v == 0 && strings.HasPrefix(n, "windowed-") {
				continue
			}
			out = append(out, expSample{fmt.Sprintf(`{inferscope_node=%q, gpu="0"}`, n), v})
		}
		return append(out, expSample{`{inferscope_node="node-q", gpu="0"}`, 0})
	}
	onNodes := func(v float64) []expSample { e := expect(v, false); return e[:len(e)-1] }
	var cases []promqlCase
	for _, e := range xidEvents {
		// Quiet before, one event counted once while the window holds it, quiet after.
		cases = append(cases,
			promqlCase{Expr: count, EvalTime: evalAt(e.at - 1), ExpSamples: expect(0, e.at == xidA)},
			promqlCase{Expr: firing, EvalTime: evalAt(e.at - 1)},
			promqlCase{Expr: count, EvalTime: evalAt(e.at), ExpSamples: expect(1, false)},
			promqlCase{Expr: count, EvalTime: evalAt(e.at + 5), ExpSamples: expect(1, false)},
			promqlCase{Expr: firing, EvalTime: evalAt(e.at + 5), ExpSamples: onNodes(1)},
			promqlCase{Expr: firing, EvalTime: evalAt(e.at + 9), ExpSamples: onNodes(1)},
			promqlCase{Expr: firing, EvalTime: evalAt(e.at + 15)},
		)
	}
	// The count never names the GPUs without XID series (node-n2).
	cases = append(cases, promqlCase{Expr: `count(` + count + `)`, EvalTime: evalAt(xidA + 5), ExpSamples: []expSample{{"{}", float64(len(nodes) + 1)}}})
	// Over a window that holds the three events, each counts once (the code that came back too).
	p3 := p
	p3.XIDWindow = 4 * time.Hour
	b3, _ := newBuilder(p3)
	cases = append(cases, promqlCase{Expr: b3.xidEvents(p3.XIDWindow), EvalTime: evalAt(xidC + 2), ExpSamples: expect(3, false)[:len(nodes)]})
	cases[len(cases)-1].ExpSamples = append(cases[len(cases)-1].ExpSamples, expSample{`{inferscope_node="node-q", gpu="0"}`, 0})

	at := xidA + 5
	ann := gpuAnnotations(p, "xid-p1", at, "node-a", 0, "XID events in the last 10m: 1", "1 XID events", 1000.0/60, "recsys v1; ")
	test := promtoolTest{
		Name:       "XID events in every exporter form and version",
		fleet:      fleet,
		PromqlTest: cases,
	}
	// One alert with its context, checked in full, on a node where only the probe writes XIDs.
	only := promtoolTest{
		Name:  "XID alert context",
		fleet: []interface{ write(int) []series }{server("node-a:8000", "recsys"), svc("node-a:8000", "recsys", always(steady)...), busyGPU("node-a", 0, 0.5), xidProbe{"node-a"}},
		AlertRuleTest: []alertCase{
			{EvalTime: evalAt(xidA - 1), Alertname: "InferscopeGPUXID", ExpAlerts: []expAlert{}},
			{EvalTime: evalAt(at), Alertname: "InferscopeGPUXID", ExpAlerts: []expAlert{{gpuLabels(p, "xid-p1", "node-a", 0), ann}}},
		},
	}
	runPromtool(t, p, []promtoolTest{test, only})
}

// dcgmMemOnly is a dcgm-exporter GPU with memory readings and no XID field.
type dcgmMemOnly struct{ node string }

func (g dcgmMemOnly) write(n int) []series {
	l := map[string]string{"gpu": "0", "UUID": "GPU-" + g.node, "hostname": g.node, "instance": g.node + ":9400", "job": "dcgm"}
	return []series{
		{labelText("DCGM_FI_DEV_FB_USED", l), samples(n, constant(20000))},
		{labelText("DCGM_FI_DEV_FB_FREE", l), samples(n, constant(20000))},
	}
}

// TestRulesNotMeasuredOnTheFleet: with the fleet's metric names known, a GPU rule whose signal
// none of its exporters writes there is "not measured" with what to enable — in the catalog and
// in the Prometheus file's header — and a rule whose signal is exported is not; with the names
// unknown nothing is claimed.
func TestRulesNotMeasuredOnTheFleet(t *testing.T) {
	p := Defaults()
	byID := func(p Params) map[string]Rule {
		rules, err := Catalog(p)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]Rule{}
		for _, r := range rules {
			out[r.ID] = r
		}
		return out
	}
	for id, r := range byID(p) {
		if r.NotMeasured != "" {
			t.Errorf("%s: not measured without knowing the fleet: %s", id, r.NotMeasured)
		}
	}
	// dcgm-exporter with a counters file that keeps memory and utilisation only.
	p.SetPresent(map[string]bool{"DCGM_FI_DEV_FB_USED": true, "DCGM_FI_DEV_FB_FREE": true, "DCGM_FI_DEV_GPU_UTIL": true, "inference_requests_total": true})
	rules := byID(p)
	if why := rules["xid-p1"].NotMeasured; !strings.Contains(why, "not measured") || !strings.Contains(why, "DCGM_FI_DEV_XID_ERRORS") {
		t.Errorf("xid-p1 on a fleet without XID series: %q", why)
	}
	for _, id := range []string{"gpumem-p0", "gpumem-p1", "gpu-idle-p0", "gpumem-forecast-p2", "latency-p0"} {
		if why := rules[id].NotMeasured; why != "" {
			t.Errorf("%s is measured there, got %q", id, why)
		}
	}
	file, err := RenderPrometheus(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(file), "# Rendered but not measured on this fleet, so it cannot fire: xid-p1") {
		t.Errorf("the rule file does not say xid-p1 is not measured:\n%s", string(file)[:600])
	}
	// The windowed count alone is enough; and a fleet without GPU memory says so for the memory rules.
	p.SetPresent(map[string]bool{"DCGM_EXP_XID_ERRORS_COUNT": true})
	rules = byID(p)
	if why := rules["xid-p1"].NotMeasured; why != "" {
		t.Errorf("xid-p1 with DCGM_EXP_XID_ERRORS_COUNT: %q", why)
	}
	if why := rules["gpumem-p0"].NotMeasured; !strings.Contains(why, "GPU memory used: not measured") {
		t.Errorf("gpumem-p0 without memory series: %q", why)
	}
	// A node that pre-allocates is judged by its KV cache: measured.
	p.SetPresent(map[string]bool{"vllm:kv_cache_usage_perc": true})
	if why := byID(p)["gpumem-p0"].NotMeasured; why != "" {
		t.Errorf("gpumem-p0 with a KV cache: %q", why)
	}
}
