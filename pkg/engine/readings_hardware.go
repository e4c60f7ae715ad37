package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
	"github.com/inferscope/inferscope/pkg/prom"
)

// HardwareQuery asks for the hardware readings of nodes: XID events, uncorrected and corrected
// ECC errors in the window [From, To] and in the reference window of length Before that ends at
// From, and the hardware clock-event reasons active in the window.
type HardwareQuery struct {
	Nodes    []string
	GPU      string // "" = every GPU of the nodes
	From, To time.Time
	Before   time.Duration
}

// NodeHardware is one node's hardware readings. A count is NaN where it was not measured (the
// exporter does not export it, or no series of it is about the node's GPUs), 0 where it was
// measured and nothing happened.
type NodeHardware struct {
	XIDBefore, XIDNow float64
	ECCBefore, ECCNow float64
	// CorrectedBefore, CorrectedNow count corrected (single-bit) ECC errors: each costs
	// nothing, but a GPU that starts counting them by the dozen has failing memory.
	CorrectedBefore, CorrectedNow float64
	Throttle                      []string // active hardware or thermal clock-event reasons in the window
	// ThrottleMeasured: clock-event reasons are exported, so an empty Throttle means none.
	ThrottleMeasured bool
}

// HardwareReadings are the readings per node asked for.
type HardwareReadings struct {
	Nodes map[string]*NodeHardware
	// Missing says why nothing could be read (no XID, ECC or clock-event series); "" otherwise.
	Missing string
	// NotMeasured says, per signal the exporters do not export, what would give it (the
	// counters-file field to enable), in the order XID, ECC, clock events, corrected ECC.
	NotMeasured []string
	// Sources names, per signal read, the metric it was read from.
	Sources map[gpufields.Signal]string
}

// gpuNodeLabels are the labels a GPU series' node may come from (GPUNode reads them in this
// order), kept by the hardware sums.
var gpuNodeLabels = gpufields.NodeLabels

// hardwareThrottleBits are the clock-event reasons that mean the hardware holds the clocks
// down — hardware slowdown, software and hardware thermal slowdown, power brake — not an idle
// GPU, the power cap or an application setting.
const hardwareThrottleBits = 0x8 | 0x20 | 0x40 | 0x80

// HardwareThrottleReasons names the hardware reasons (hardwareThrottleBits) as the probe's
// `reason` label does.
func HardwareThrottleReasons() []string {
	var out []string
	for _, r := range snapshot.ThrottleReasonNames {
		if r.Bit&hardwareThrottleBits != 0 {
			out = append(out, r.Name)
		}
	}
	return out
}

// HardwareThrottleBits is the number of hardware reasons set in a clock-event bitmask x (a
// selector or an expression). PromQL has no bitwise and, hence floor and modulo.
func HardwareThrottleBits(x string) string {
	var bits []string
	for _, r := range snapshot.ThrottleReasonNames {
		if r.Bit&hardwareThrottleBits != 0 {
			bits = append(bits, fmt.Sprintf("floor(%s/%d)%%2", x, r.Bit))
		}
	}
	return strings.Join(bits, " + ")
}

// HardwareThrottle is the PromQL number of hardware clock-event reasons active at the
// evaluation time on each GPU, summed by the labels `by`, from one clock-event name; sel
// selects the name's series with extra matchers: the probe's per-reason gauge narrowed to the
// hardware reasons, or the hardware bits of dcgm-exporter's bitmask. A GPU whose exporter writes
// the field reads 0 while no hardware reason is active; the power cap, idle and application
// clock reasons never count. The alert renderings use it, so the rules count what triage lists.
func HardwareThrottle(n gpufields.Name, sel func(extra ...prom.Matcher) (string, error), by string) (string, error) {
	switch n.Shape {
	case gpufields.ReasonGauge:
		s, err := sel(prom.In("reason", HardwareThrottleReasons()...))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("sum by (%s) (max by (%s, gpu, reason) (%s))", by, by, s), nil
	case gpufields.Bitmask:
		s, err := sel()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("sum by (%s) (max by (%s, gpu) (%s))", by, by, HardwareThrottleBits(s)), nil
	}
	return "", fmt.Errorf("%s is not a clock-event name", n.Metric)
}

// probeHardwareThrottle lists, per node and reason, the hardware reasons active in the window
// from the probe's per-reason gauge (x, a selector narrowed to those reasons).
func probeHardwareThrottle(by, x, window string) string {
	return fmt.Sprintf(`max by (%s, reason) (max_over_time(%s[%s])) > 0`, by, x, window)
}

// dcgmHardwareThrottle lists, per node, whether dcgm-exporter's clock-event bitmask (x, a
// selector) had a hardware reason set in the window, as the number of hardware bits set at
// once; a subquery samples the mask once a minute.
func dcgmHardwareThrottle(by, x, window string) string {
	return fmt.Sprintf(`label_replace(max by (%s) (max_over_time((%s)[%s:1m])) > 0, "reason", "hw_or_thermal_slowdown", "", "")`,
		by, HardwareThrottleBits(x), window)
}

// oncePerGPU keeps one count per GPU and event kind before the node's sum: dcgm-exporter
// (in flex mode, its default) reports a MIG-partitioned GPU only through its GPU instances, each
// instance's series labelled GPU_I_ID and GPU_I_PROFILE, and with its own pod, container and
// namespace labels, and each carries the parent GPU's device-wide fields (XID, ECC, clocks)
// again: the instances' copies are one event. The labels kept tell events apart (the XID code
// of the probe's counter, dcgm-exporter's err_code, the windowed count's xid and window, the
// terms of XIDEvents). A GPU without MIG has one series per event kind, or one per pod that used
// it in turn: those overlap in time as the instances' do not, and the max keeps the larger.
func oncePerGPU(by string) string {
	return fmt.Sprintf("max by (%s, gpu, xid, err_code, %s, inferscope_new, inferscope_tile) ", by, gpufields.WindowLabel)
}

// newOrIncrease counts a counter's growth including series born inside the window (the first
// XID of a code creates its series at 1, which increase() cannot see): a series absent at the
// window's start counts its whole value, any other its increase. The new series come first:
// `or` keeps the left side's series, and increase() of a series born in the window is 0.
func newOrIncrease(by, sel string, w time.Duration) string {
	d := promqlDuration(w)
	return fmt.Sprintf("sum by (%s) (%s((%s unless %s offset %s) or increase(%s[%s])))", by, oncePerGPU(by), sel, sel, d, sel, d)
}

// ECCErrorCount is the PromQL count of ECC errors (uncorrected or corrected) in the window w
// before the evaluation time, summed by the labels `by`, from one ECC name's selector sel: the
// counter's increase, once per GPU. Unlike the XID counters, both exporters write the count
// from the GPU's first scrape on (0 without errors), so a series that appears already holding a
// count — an exporter back after a gap, or scraped under a new target label — brings no new
// error, and a drop (the driver reloaded, the GPU was reset) is a counter reset, not errors.
// The alert renderings use it too, so the rule counts what triage reads.
func ECCErrorCount(sel, by string, w time.Duration) string {
	return fmt.Sprintf("sum by (%s) (%s(increase(%s[%s])))", by, oncePerGPU(by), sel, promqlDuration(w))
}

// hardwareExprs are the XID, ECC and throttle expressions of a window, one per name of the
// signal that Prometheus has, best first, and the names read. Each is asked on its own: a node
// takes its reading from the best name that has series about it, so a fleet whose nodes run
// different exporters (or versions) is read node by node, never counted twice.
type hardwareExprs struct {
	xid, ecc, corrected, throttle []func(w time.Duration) string
	sources                       map[gpufields.Signal][]string
}

// hardwareSelector selects a name's series, narrowed to the GPU asked for (every naming
// carries the GPU index in a `gpu` label).
func hardwareSelector(n gpufields.Name, gpu string, extra ...prom.Matcher) (string, error) {
	ms := append(prom.EqAll(n.Matchers), extra...)
	if gpu != "" {
		ms = append(ms, prom.Eq("gpu", gpu))
	}
	return sortedSelector(n.Metric, ms...)
}

func (r *Reader) hardwareExprs(ctx context.Context, gpu string) (hardwareExprs, error) {
	by := strings.Join(gpuNodeLabels, ", ")
	present := func(n string) bool { return r.e.Present == nil || r.e.Present[n] }
	x := hardwareExprs{sources: map[gpufields.Signal][]string{}}
	for _, n := range gpufields.Of(gpufields.XID).Found(present) {
		f, err := r.xidExpr(ctx, n, gpu, by)
		if err != nil {
			return x, err
		}
		x.xid, x.sources[gpufields.XID] = append(x.xid, f), append(x.sources[gpufields.XID], n.Metric)
	}
	for _, c := range []struct {
		sig  gpufields.Signal
		into *[]func(time.Duration) string
	}{{gpufields.ECCErrors, &x.ecc}, {gpufields.ECCCorrected, &x.corrected}} {
		for _, n := range gpufields.Of(c.sig).Found(present) {
			sel, err := hardwareSelector(n, gpu)
			if err != nil {
				return x, err
			}
			*c.into = append(*c.into, func(w time.Duration) string { return ECCErrorCount(sel, by, w) })
			x.sources[c.sig] = append(x.sources[c.sig], n.Metric)
		}
	}
	for _, n := range gpufields.Of(gpufields.ClockEvents).Found(present) {
		var extra []prom.Matcher
		if n.Shape == gpufields.ReasonGauge {
			extra = append(extra, prom.In("reason", HardwareThrottleReasons()...))
		}
		sel, err := hardwareSelector(n, gpu, extra...)
		if err != nil {
			return x, err
		}
		x.sources[gpufields.ClockEvents] = append(x.sources[gpufields.ClockEvents], n.Metric)
		if n.Shape == gpufields.ReasonGauge {
			x.throttle = append(x.throttle, func(w time.Duration) string { return probeHardwareThrottle(by, sel, promqlDuration(w)) })
		} else {
			x.throttle = append(x.throttle, func(w time.Duration) string { return dcgmHardwareThrottle(by, sel, promqlDuration(w)) })
		}
	}
	return x, nil
}

// XIDEvents is the PromQL count of XID events in the window w before the evaluation time, each
// event once, summed by the labels `by`, from one XID name; sel selects the name's series with
// extra matchers, windows are a windowed count's window lengths (ms; nil = the default):
//   - a counter by code (the probe): its growth, series born in the window included; nodes
//     whose GPUs the exporter watches (its Presence metric) count 0 until a first event;
//   - dcgm-exporter's last-value gauge: a change of value within a series (the unlabelled
//     form) plus every birth of a non-zero series in the window, sampled once a minute —
//     since 2024 the gauge carries the code as err_code/err_msg labels, so a new code is a
//     new series whose value never changes, and a code that comes back is born again. A
//     repeat of the last code stays invisible to a last-value gauge;
//   - DCGM_EXP_XID_ERRORS_COUNT, a count over the exporter's sliding window W: the sum of its
//     values at the window's end and every W before it counts each event once.
//
// On a MIG-partitioned GPU the instances' copies of the device-wide field count once (oncePerGPU).
//
// The Prometheus and Grafana alert renderings use it too, so the rules count as triage does.
func XIDEvents(n gpufields.Name, sel func(extra ...prom.Matcher) (string, error), by string, w time.Duration, windows []int64) (string, error) {
	s, err := sel()
	if err != nil {
		return "", err
	}
	d := promqlDuration(w)
	switch n.Shape {
	case gpufields.Counter:
		expr := newOrIncrease(by, s, w)
		if n.Presence == "" {
			return expr, nil
		}
		present, err := gpuSelectorOf(n.Presence, sel)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s or 0 * max by (%s) (%s)", expr, by, present), nil
	case gpufields.WindowCount:
		return windowCountSum(by, sel, windows, w)
	case gpufields.LastValue:
		return fmt.Sprintf(`sum by (%s) (%s(changes(%s[%s]) or label_replace(sum_over_time(clamp((%s != 0) unless %s offset 1m, 1, 1)[%s:1m]), "inferscope_new", "1", "", "")))`,
			by, oncePerGPU(by), s, d, s, s, d), nil
	}
	return "", fmt.Errorf("%s is not an XID name", n.Metric)
}

// gpuSelectorOf selects another metric with the matchers sel adds to its own name: sel's
// selector with the name replaced.
func gpuSelectorOf(metric string, sel func(extra ...prom.Matcher) (string, error)) (string, error) {
	s, err := sel()
	if err != nil {
		return "", err
	}
	if i := strings.IndexByte(s, '{'); i >= 0 {
		return metric + s[i:], nil
	}
	return metric, nil
}

// xidExpr is XIDEvents for the readings: the name's selector narrowed to the GPU asked for, the
// windows the exporters report.
func (r *Reader) xidExpr(ctx context.Context, n gpufields.Name, gpu, by string) (func(time.Duration) string, error) {
	var windows []int64
	if n.Shape == gpufields.WindowCount {
		var err error
		if windows, err = r.xidCountWindows(ctx, n.Metric); err != nil {
			return nil, err
		}
	}
	sel := func(extra ...prom.Matcher) (string, error) { return hardwareSelector(n, gpu, extra...) }
	if _, err := XIDEvents(n, sel, by, time.Minute, windows); err != nil {
		return nil, err
	}
	return func(w time.Duration) string {
		expr, _ := XIDEvents(n, sel, by, w, windows) // the selectors were checked above
		return expr
	}, nil
}

// maxXIDTiles bounds the terms of a windowed count's sum; past it the sum samples the window
// by a subquery (each event still counted once, give or take the scrape at a tile's edge).
const maxXIDTiles = 48

// xidCountWindows lists the window lengths (ms) the exporters of a windowed count use.
func (r *Reader) xidCountWindows(ctx context.Context, metric string) ([]int64, error) {
	var out []int64
	if r.e.Prom != nil {
		sel, err := prom.Selector(metric)
		if err != nil {
			return nil, err
		}
		vals, err := r.e.Prom.LabelValues(ctx, gpufields.WindowLabel, []string{sel}, time.Time{}, time.Time{})
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= 1000 {
				out = append(out, ms)
			}
		}
	}
	if len(out) == 0 {
		out = []int64{gpufields.DefaultWindow}
	}
	return out, nil
}

// windowCountSum is, per `by`, the events of the last w from counts over sliding windows: for
// each window length W, the count at the end plus the counts W, 2W, … before.
func windowCountSum(by string, sel func(extra ...prom.Matcher) (string, error), windows []int64, w time.Duration) (string, error) {
	if len(windows) == 0 {
		windows = []int64{gpufields.DefaultWindow}
	}
	var terms []string
	for _, ms := range windows {
		s, err := sel(prom.Eq(gpufields.WindowLabel, strconv.FormatInt(ms, 10)))
		if err != nil {
			return "", err
		}
		step := time.Duration(ms) * time.Millisecond
		tiles := int((w + step - 1) / step)
		if tiles > maxXIDTiles {
			terms = append(terms, fmt.Sprintf("sum_over_time(%s[%s:%s])", s, promqlDuration(w), promqlDuration(step)))
			continue
		}
		for k := 0; k < tiles; k++ {
			term := s
			if k > 0 {
				term += " offset " + promqlDuration(time.Duration(k)*step)
			}
			terms = append(terms, fmt.Sprintf(`label_replace(%s, "inferscope_tile", "%d", "", "")`, term, k))
		}
	}
	return fmt.Sprintf("sum by (%s) (%s(%s))", by, oncePerGPU(by), strings.Join(terms, " or ")), nil
}

// HardwareReadings reads q. Nothing read answers Missing; a failed query answers the readings
// of the queries before it with the error.
func (r *Reader) HardwareReadings(ctx context.Context, q HardwareQuery) (HardwareReadings, error) {
	out := HardwareReadings{Nodes: map[string]*NodeHardware{}}
	for _, n := range q.Nodes {
		out.Nodes[n] = &NodeHardware{XIDBefore: math.NaN(), XIDNow: math.NaN(), ECCBefore: math.NaN(), ECCNow: math.NaN(),
			CorrectedBefore: math.NaN(), CorrectedNow: math.NaN()}
	}
	x, err := r.hardwareExprs(ctx, q.GPU)
	out.Sources = map[gpufields.Signal]string{}
	for sig, names := range x.sources {
		out.Sources[sig] = strings.Join(names, ", ")
	}
	if err != nil {
		return out, err
	}
	for _, sig := range []gpufields.Signal{gpufields.XID, gpufields.ECCErrors, gpufields.ClockEvents, gpufields.ECCCorrected} {
		if len(x.sources[sig]) == 0 {
			out.NotMeasured = append(out.NotMeasured, gpufields.Of(sig).NotMeasured())
		}
	}
	if len(x.sources) == 0 {
		out.Missing = "no XID, ECC or clock-event series (probe, dcgm-exporter)"
		return out, nil
	}
	for _, h := range out.Nodes {
		h.ThrottleMeasured = len(x.throttle) > 0
	}
	for _, rd := range hardwareReads(x, q) {
		at := q.From
		if rd.now {
			at = q.To
		}
		samples, err := r.instant(ctx, rd.expr, at)
		if err != nil {
			return out, err
		}
		// A node is measured where a series is about its GPUs: the sums answer 0 for a series
		// without events, nothing for a node without series (NaN stays). A node read from a
		// better name already keeps that reading.
		answered := map[string]bool{}
		for _, s := range samples {
			node := GPUNode(s.Labels)
			if h := out.Nodes[node]; h != nil && !rd.taken[node] {
				rd.set(h, s.V, s.Labels)
				answered[node] = true
			}
		}
		for node := range answered {
			rd.taken[node] = true
		}
	}
	return out, nil
}

// hardwareRead is one instant query of the hardware readings.
type hardwareRead struct {
	expr  string
	now   bool // at To (the window), else at From (the reference window)
	set   func(h *NodeHardware, v float64, labels Labels)
	taken map[string]bool // nodes this reading was taken from a better name for (shared by the names)
}

func hardwareReads(x hardwareExprs, q HardwareQuery) []hardwareRead {
	w := q.To.Sub(q.From)
	var reads []hardwareRead
	add := func(exprs []func(time.Duration) string, d time.Duration, now bool, set func(h *NodeHardware, v float64, labels Labels)) {
		taken := map[string]bool{}
		for _, f := range exprs {
			reads = append(reads, hardwareRead{expr: f(d), now: now, set: set, taken: taken})
		}
	}
	add(x.xid, w, true, func(h *NodeHardware, v float64, _ Labels) { h.XIDNow = nanAdd(h.XIDNow, v) })
	add(x.xid, q.Before, false, func(h *NodeHardware, v float64, _ Labels) { h.XIDBefore = nanAdd(h.XIDBefore, v) })
	add(x.ecc, w, true, func(h *NodeHardware, v float64, _ Labels) { h.ECCNow = nanAdd(h.ECCNow, v) })
	add(x.ecc, q.Before, false, func(h *NodeHardware, v float64, _ Labels) { h.ECCBefore = nanAdd(h.ECCBefore, v) })
	add(x.corrected, w, true, func(h *NodeHardware, v float64, _ Labels) { h.CorrectedNow = nanAdd(h.CorrectedNow, v) })
	add(x.corrected, q.Before, false, func(h *NodeHardware, v float64, _ Labels) { h.CorrectedBefore = nanAdd(h.CorrectedBefore, v) })
	add(x.throttle, w, true, func(h *NodeHardware, _ float64, l Labels) {
		if reason := l["reason"]; !containsString(h.Throttle, reason) {
			h.Throttle = append(h.Throttle, reason)
		}
	})
	return reads
}

func containsString(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
