package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/probe/snapshot"
	"github.com/inferscope/inferscope/pkg/prom"
)

// HardwareQuery asks for the hardware readings of nodes: XID events and uncorrected ECC
// errors in the window [From, To] and in the reference window of length Before that ends at
// From, and the hardware clock-event reasons active in the window.
type HardwareQuery struct {
	Nodes    []string
	GPU      string // "" = every GPU of the nodes
	From, To time.Time
	Before   time.Duration
}

// NodeHardware is one node's hardware readings; a count is NaN where it was not read, 0 where
// it was read and no series had any.
type NodeHardware struct {
	XIDBefore, XIDNow float64
	ECCBefore, ECCNow float64
	Throttle          []string // active hardware or thermal clock-event reasons in the window
}

// HardwareReadings are the readings per node asked for.
type HardwareReadings struct {
	Nodes map[string]*NodeHardware
	// Missing says why nothing could be read (no XID, ECC or clock-event series); "" otherwise.
	Missing string
}

// gpuNodeLabels are the labels a GPU series' node may come from (GPUNode reads them in this
// order), kept by the hardware sums.
var gpuNodeLabels = []string{"node", "Hostname", "hostname", "instance"}

// hardwareThrottleBits are the clock-event reasons that mean the hardware holds the clocks
// down — hardware slowdown, software and hardware thermal slowdown, power brake — not an idle
// GPU, the power cap or an application setting.
const hardwareThrottleBits = 0x8 | 0x20 | 0x40 | 0x80

// hardwareThrottle names the hardware reasons as the probe's `reason` label does.
func hardwareThrottle() []string {
	var out []string
	for _, r := range snapshot.ThrottleReasonNames {
		if r.Bit&hardwareThrottleBits != 0 {
			out = append(out, r.Name)
		}
	}
	return out
}

// probeHardwareThrottle lists, per node and reason, the hardware reasons active in the window
// from the probe's per-reason gauge (x, a selector narrowed to those reasons).
func probeHardwareThrottle(by, x, window string) string {
	return fmt.Sprintf(`max by (%s, reason) (max_over_time(%s[%s])) > 0`, by, x, window)
}

// dcgmHardwareThrottle lists, per node, whether dcgm-exporter's clock-event bitmask (x, a
// selector) had a hardware reason set in the window, as the number of hardware bits set at
// once. PromQL has no bitwise and, hence floor and modulo; a subquery samples the mask once a
// minute.
func dcgmHardwareThrottle(by, x, window string) string {
	var bits []string
	for _, r := range snapshot.ThrottleReasonNames {
		if r.Bit&hardwareThrottleBits != 0 {
			bits = append(bits, fmt.Sprintf("floor(%s/%d)%%2", x, r.Bit))
		}
	}
	return fmt.Sprintf(`label_replace(max by (%s) (max_over_time((%s)[%s:1m])) > 0, "reason", "hw_or_thermal_slowdown", "", "")`,
		by, strings.Join(bits, " + "), window)
}

// newOrIncrease counts a counter's growth including series born inside the window (the first
// XID of a code creates its series at 1, which increase() cannot see): a series absent at the
// window's start counts its whole value, any other its increase. The new series come first:
// `or` keeps the left side's series, and increase() of a series born in the window is 0.
func newOrIncrease(by, sel string, w time.Duration) string {
	d := promqlDuration(w)
	return fmt.Sprintf("sum by (%s) ((%s unless %s offset %s) or increase(%s[%s]))", by, sel, sel, d, sel, d)
}

// hardwareExprs are the XID, ECC and throttle expressions of a window, in the probe's naming
// or dcgm-exporter's, whichever Prometheus has; ok is false where it has neither.
type hardwareExprs struct {
	xid, ecc, throttle func(w time.Duration) string
}

func (r *Reader) hardwareExprs(gpu string) (hardwareExprs, bool, error) {
	by := strings.Join(gpuNodeLabels, ", ")
	has := func(n string) bool { return r.e.Present == nil || r.e.Present[n] }
	var selErr error
	// sel is a metric's selector, narrowed to the GPU asked for (both namings carry the GPU
	// index in a `gpu` label).
	sel := func(metric string, ms ...prom.Matcher) string {
		if gpu != "" {
			ms = append(ms, prom.Eq("gpu", gpu))
		}
		s, err := sortedSelector(metric, ms...)
		if err != nil {
			selErr = err
		}
		return s
	}
	var x hardwareExprs
	switch {
	case has("inferscope_gpu_xid_errors_total") || has("inferscope_gpu_ecc_errors_total") || has("inferscope_gpu_clock_event_reason_active"):
		xid, ecc := sel("inferscope_gpu_xid_errors_total"), sel("inferscope_gpu_ecc_errors_total", prom.Eq("type", "uncorrected"))
		thr := sel("inferscope_gpu_clock_event_reason_active", prom.In("reason", hardwareThrottle()...))
		x.xid = func(w time.Duration) string { return newOrIncrease(by, xid, w) }
		x.ecc = func(w time.Duration) string { return newOrIncrease(by, ecc, w) }
		x.throttle = func(w time.Duration) string { return probeHardwareThrottle(by, thr, promqlDuration(w)) }
	case has("DCGM_FI_DEV_XID_ERRORS") || has("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"):
		xid, ecc, thr := sel("DCGM_FI_DEV_XID_ERRORS"), sel("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"), sel("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
		x.xid = func(w time.Duration) string {
			return fmt.Sprintf("sum by (%s) (changes(%s[%s]))", by, xid, promqlDuration(w))
		}
		x.ecc = func(w time.Duration) string { return newOrIncrease(by, ecc, w) }
		x.throttle = func(w time.Duration) string { return dcgmHardwareThrottle(by, thr, promqlDuration(w)) }
	default:
		return x, false, nil
	}
	return x, true, selErr
}

// HardwareReadings reads q. Nothing read answers Missing; a failed query answers the readings
// of the queries before it with the error.
func (r *Reader) HardwareReadings(ctx context.Context, q HardwareQuery) (HardwareReadings, error) {
	out := HardwareReadings{Nodes: map[string]*NodeHardware{}}
	for _, n := range q.Nodes {
		out.Nodes[n] = &NodeHardware{XIDBefore: math.NaN(), XIDNow: math.NaN(), ECCBefore: math.NaN(), ECCNow: math.NaN()}
	}
	x, ok, err := r.hardwareExprs(q.GPU)
	if !ok {
		out.Missing = "no XID, ECC or clock-event series (probe or dcgm-exporter)"
		return out, nil
	}
	if err != nil {
		return out, err
	}
	w := q.To.Sub(q.From)
	type read struct {
		expr string
		now  bool // at To (the window), else at From (the reference window)
		set  func(h *NodeHardware, v float64, labels Labels)
	}
	reads := []read{
		{x.xid(w), true, func(h *NodeHardware, v float64, _ Labels) { h.XIDNow = nanAdd(h.XIDNow, v) }},
		{x.xid(q.Before), false, func(h *NodeHardware, v float64, _ Labels) { h.XIDBefore = nanAdd(h.XIDBefore, v) }},
		{x.ecc(w), true, func(h *NodeHardware, v float64, _ Labels) { h.ECCNow = nanAdd(h.ECCNow, v) }},
		{x.ecc(q.Before), false, func(h *NodeHardware, v float64, _ Labels) { h.ECCBefore = nanAdd(h.ECCBefore, v) }},
		{x.throttle(w), true, func(h *NodeHardware, _ float64, l Labels) {
			if reason := l["reason"]; !containsString(h.Throttle, reason) {
				h.Throttle = append(h.Throttle, reason)
			}
		}},
	}
	for _, rd := range reads {
		at := q.From
		if rd.now {
			at = q.To
		}
		samples, err := r.instant(ctx, rd.expr, at)
		if err != nil {
			return out, err
		}
		for _, h := range out.Nodes {
			// Measured: zero unless a series says otherwise.
			if rd.now && math.IsNaN(h.XIDNow) {
				h.XIDNow, h.ECCNow = 0, 0
			}
			if !rd.now && math.IsNaN(h.XIDBefore) {
				h.XIDBefore, h.ECCBefore = 0, 0
			}
		}
		for _, s := range samples {
			if h := out.Nodes[GPUNode(s.Labels)]; h != nil {
				rd.set(h, s.V, s.Labels)
			}
		}
	}
	return out, nil
}

func containsString(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
