package triage

import (
	"fmt"
	"math"
	"strings"
)

// Decomposition first: a request's time is queue + compute (prefill + decode where the server
// times them) + network; the segment that grew most explains the latency change and leads, and
// the causes are then looked for among that segment's candidates. A cause of another segment
// can be real, but it does not explain the change the on-call engineer was paged for.

// Segment names.
const (
	SegQueue    = "queue"
	SegCompute  = "compute"
	SegPrefill  = "prefill"
	SegDecode   = "decode"
	SegNetwork  = "network"
	SegOverhead = "overhead"
)

// SegmentChange is one segment's share of the latency change of the subject that changed most.
type SegmentChange struct {
	Segment string `json:"segment"`
	// Parent is the segment this one is part of (compute for prefill and decode).
	Parent string   `json:"parent,omitempty"`
	Before *float64 `json:"before"` // mean seconds per request; nil where not measured
	Now    *float64 `json:"now"`
	Change *float64 `json:"change"` // now − before, seconds
	// Share of the total change (queue + compute + network) this segment holds; nil when the
	// total did not grow.
	Share *float64 `json:"share"`
	Note  string   `json:"note,omitempty"`
}

// segmentOf is the segment whose change a cause explains ("" for causes of no one segment:
// a warm-up touches them all).
var segmentOf = map[string]string{
	CauseTrafficSurge: SegQueue, CauseQueue: SegQueue, CauseFramework: SegQueue,
	CauseComputeMemory: SegCompute, CauseKVCache: SegCompute, CauseModelRegression: SegCompute,
	CauseInputShift: SegCompute, CauseHardware: SegCompute, CauseGPUIdle: SegCompute, CauseCompute: SegCompute,
	CauseNetwork: SegNetwork,
}

// Lines of a latency change: the total (queue + compute + network) grows by at least
// totalRise× and the step floor (stepFloor of its time before), and the leading segment by at
// least that floor. Below them nothing leads and every cause stands on its own evidence.
const totalRise = 1.2

// A change confined to a share of the requests (one client's long inputs, one GPU of several)
// lifts the P95 past the latency alert's P1 line (tailLine×, and the floor) before the mean
// moves by the floor: the P95's rise then stands for the total's, provided the mean rose too (by
// tailMean×), and the segment holding at least tailShare of the mean's rise leads. The line is
// read against the hour before or, as the alert reads it, against the P95's 7-day
// same-time-of-day baseline: an hour before that held the daily peak (or part of the change)
// hides a rise the alert sees; the P95 must still have risen by the floor over the hour before.
const (
	tailLine  = 1.5
	tailMean  = 1.05
	tailShare = 2.0 / 3
)

// tailRise says whether the subject's change is confined to a share of its requests (above);
// floor is the step floor of the subject's time before.
func tailRise(s Subject, total Pair, floor float64) bool {
	past := ratio(s.P95.Now, s.P95.Before) >= tailLine || s.BaselineRatio >= tailLine
	return past && s.P95.Now-s.P95.Before >= floor && ratio(total.Now, total.Before) >= tailMean
}

// segPart is one segment's mean time per request, before and now.
type segPart struct {
	name string
	p    Pair
}

// confinedRise says whether the subject's change is confined to one segment: that segment
// stepped past the segment rule (riseRatio× and floor) and holds tailShare of the total's
// rise, and the total rose by tailMean×. Where one segment is a small part of the time (a queue of
// 70 ms before 2.3 s of compute), it can grow severalfold while the total stays under its
// totalRise line: the change is still the segment's, and its causes explain it.
func confinedRise(parts []segPart, total Pair, floor float64) bool {
	change := total.Now - total.Before
	if !finite(change) || ratio(total.Now, total.Before) < tailMean {
		return false
	}
	for _, x := range parts {
		dx := x.p.Now - x.p.Before
		if finite(dx) && dx >= floor && dx >= tailShare*change && ratio(x.p.Now, x.p.Before) >= riseRatio {
			return true
		}
	}
	return false
}

// offLead weighs a cause whose segment did not lead the change.
const offLead = 0.6

// decomp is the decomposition of one subject.
type decomp struct {
	s     Subject
	who   string
	total Pair
	lead  string
	segs  []SegmentChange
}

// delta is the total's growth in seconds (−Inf where not measured).
func (d decomp) delta() float64 {
	if x := d.total.Now - d.total.Before; finite(x) {
		return x
	}
	return math.Inf(-1)
}

// decompose attributes the subject's change to its segments.
func decompose(s Subject, who string) decomp {
	d := decomp{s: s, who: who}
	parts := []segPart{{SegQueue, s.Queue}, {SegCompute, s.Compute}, {SegNetwork, s.Network}}
	d.total = Pair{0, 0}
	measured := 0
	for _, x := range parts {
		if finite(x.p.Before) && finite(x.p.Now) {
			d.total.Before += x.p.Before
			d.total.Now += x.p.Now
			measured++
		}
	}
	if measured == 0 || !finite(s.Queue.Now+s.Compute.Now) {
		d.total = nanPair()
	}
	change := d.total.Now - d.total.Before
	floor := stepFloor(d.total.Before)
	grew := finite(change) && change >= floor && ratio(d.total.Now, d.total.Before) >= totalRise
	segLine := floor
	if !grew && (tailRise(s, d.total, floor) || confinedRise(parts, d.total, floor)) {
		grew, segLine = true, tailShare*change
	}
	best := 0.0
	seg := func(name, parent string, p Pair, note string) SegmentChange {
		c := SegmentChange{Segment: name, Parent: parent, Before: num(p.Before), Now: num(p.Now), Change: num(dust(p.Now - p.Before)), Note: note}
		if grew && finite(p.Now-p.Before) {
			c.Share = num(math.Round(dust(p.Now-p.Before)/change*1e4) / 1e4)
		}
		if c.Before == nil || c.Now == nil {
			c.Note = strings.TrimPrefix(note+"; not measured", "; ")
		}
		return c
	}
	for _, x := range parts {
		d.segs = append(d.segs, seg(x.name, "", x.p, ""))
		if x.name == SegCompute && finite(s.Prefill.Now) && finite(s.Decode.Now) {
			d.segs = append(d.segs, seg(SegPrefill, SegCompute, s.Prefill, ""), seg(SegDecode, SegCompute, s.Decode, ""))
		}
		if dx := x.p.Now - x.p.Before; grew && finite(dx) && dx >= segLine && dx > best {
			best, d.lead = dx, x.name
		}
	}
	d.segs = append(d.segs, SegmentChange{Segment: SegOverhead,
		Note: "not measured: the split has no server-overhead segment (time outside queue and compute); it is part of no segment here"})
	return d
}

// leadText says which segment explains the change, for summaries.
func (d decomp) leadText() string {
	if d.lead == "" {
		return ""
	}
	for _, c := range d.segs {
		if c.Segment == d.lead && c.Share != nil {
			return fmt.Sprintf("the %s segment holds %.0f %% of the latency change of %s (%s → %s)", d.lead, *c.Share*100, d.who, msText(d.total.Before), msText(d.total.Now))
		}
	}
	return ""
}

func (d *decomp) leadTextOrEmpty() string {
	if d == nil {
		return ""
	}
	return d.leadText()
}

// dust rounds a difference of two means to the nanosecond: float dust is no change.
func dust(x float64) float64 { return math.Round(x*1e9) / 1e9 }
