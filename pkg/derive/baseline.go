package derive

import (
	"fmt"
	"math"
	"time"
)

const day = 24 * time.Hour

// Status is the alert state of a baseline point.
type Status int8

// Baseline statuses; the numbers are what the status series carries.
const (
	StatusOK Status = 0 // within limits, or not evaluable
	StatusP1 Status = 1 // ratio above P1Ratio for at least For
	StatusP0 Status = 2 // ratio above P0Ratio, at once
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusP1:
		return "P1 candidate"
	case StatusP0:
		return "P0"
	}
	return fmt.Sprintf("status(%d)", int(s))
}

// BaselineReason says why a point could not be judged (its status is then 0).
type BaselineReason uint8

// Reasons, in order of precedence.
const (
	ReasonNone         BaselineReason = iota
	ReasonNoCurrent                   // no current sample at the point
	ReasonFewDays                     // fewer than MinDays previous days had data
	ReasonZeroBaseline                // the baseline mean is 0, a ratio means nothing
)

func (r BaselineReason) String() string {
	switch r {
	case ReasonNone:
		return ""
	case ReasonNoCurrent:
		return "no current sample"
	case ReasonFewDays:
		return "too few previous days with data"
	case ReasonZeroBaseline:
		return "baseline is zero"
	}
	return fmt.Sprintf("reason(%d)", int(r))
}

// BaselineOptions tune Baseline. Zero fields take the defaults.
type BaselineOptions struct {
	Days    int           // previous days compared, default 7
	Window  time.Duration // half-width of the same-time-of-day window, default 10m
	P1Ratio float64       // default 1.5
	P0Ratio float64       // default 3
	For     time.Duration // how long ratio > P1Ratio must hold, default 3m
	MinDays int           // days with data needed to judge, default 3
	// CurrentLookback: the current value at t is the latest sample in
	// (t − CurrentLookback, t]; 0 means the sample at exactly t.
	CurrentLookback time.Duration
}

// DefaultBaselineOptions returns the thresholds of the brief.
func DefaultBaselineOptions() BaselineOptions {
	return BaselineOptions{Days: 7, Window: 10 * time.Minute, P1Ratio: 1.5, P0Ratio: 3, For: 3 * time.Minute, MinDays: 3}
}

func (o BaselineOptions) withDefaults() (BaselineOptions, error) {
	d := DefaultBaselineOptions()
	if o.Days == 0 {
		o.Days = d.Days
	}
	if o.Window == 0 {
		o.Window = d.Window
	}
	if o.P1Ratio == 0 {
		o.P1Ratio = d.P1Ratio
	}
	if o.P0Ratio == 0 {
		o.P0Ratio = d.P0Ratio
	}
	if o.For == 0 {
		o.For = d.For
	}
	if o.MinDays == 0 {
		o.MinDays = d.MinDays
	}
	switch {
	case o.Days < 1 || o.Days > 366:
		return o, fmt.Errorf("baseline days must be within 1..366, got %d", o.Days)
	case o.Window < 0 || o.Window >= day/2:
		return o, fmt.Errorf("baseline window must be within 0..12h, got %s", o.Window)
	case !(o.P1Ratio > 0) || !(o.P0Ratio >= o.P1Ratio):
		return o, fmt.Errorf("baseline ratios need 0 < P1 (%g) <= P0 (%g)", o.P1Ratio, o.P0Ratio)
	case o.For < 0 || o.CurrentLookback < 0:
		return o, fmt.Errorf("baseline durations must not be negative")
	case o.MinDays < 1 || o.MinDays > o.Days:
		return o, fmt.Errorf("baseline minimum days must be within 1..%d, got %d", o.Days, o.MinDays)
	}
	return o, nil
}

// HistoryStart is the first timestamp the history series given to Baseline
// must cover for outputs starting at start.
func (o BaselineOptions) HistoryStart(start int64) int64 {
	o, _ = o.withDefaults()
	return start - int64(o.Days)*day.Milliseconds() - o.Window.Milliseconds()
}

// BaselineResult holds the baseline-relative view at each output timestamp.
type BaselineResult struct {
	T       []int64
	Current []float64        // the latency at t
	Mean    []float64        // mean of the day-means, NaN without data
	Std     []float64        // sample standard deviation of the day-means (n−1), NaN below 2 days
	Days    []int            // previous days that had data in their window
	Ratio   []float64        // Current / Mean
	Z       []float64        // (Current − Mean) / Std, NaN when Std is 0 or NaN
	Status  []Status         // see Baseline
	Reason  []BaselineReason // why a point was not judged
}

// Baseline compares a latency series with itself at the same time of day on
// previous days.
//
// history must cover [start − Days·24h − Window, end] (see HistoryStart) on
// any ascending timestamps, typically one range query of the P95 at the panel
// step; out holds the ascending output timestamps. For each t in out and each
// previous day d = 1..Days, the day-mean is the mean of history's non-NaN
// samples with timestamps in [t − d·24h − Window, t − d·24h + Window].
//
// Missing days: a day whose window holds no sample is left out; it counts
// neither as zero nor towards Days. Mean is the plain mean of the day-means
// that exist (every day weighs the same however many samples it had), Std is
// their sample standard deviation (divisor n−1: with at most a week of
// day-means the unbiased estimate is the honest one, and it is undefined,
// NaN, for a single day). Days are exact 24 h offsets in Unix time, so a
// daylight-saving change shifts local time of day by an hour.
//
// Status: StatusP0 when Ratio > P0Ratio (at once); StatusP1 when Ratio >
// P1Ratio has held at every output point for at least For (the run starts
// at its first point, as Prometheus' "for" does, and a NaN or unjudged point
// ends it); else StatusOK. A point is not judged (status 0, Reason set) when
// it has no current sample, fewer than MinDays days with data, or a zero
// baseline.
//
// Cost: one pass to build prefix sums of the non-NaN values and counts, then
// for each output point and day two pointers that only move forward, so each
// window costs O(1) and the whole call O(len(history) + len(out)·Days).
func Baseline(history Series, out []int64, opt BaselineOptions) (BaselineResult, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return BaselineResult{}, err
	}
	if err := history.Validate(); err != nil {
		return BaselineResult{}, fmt.Errorf("baseline history: %w", err)
	}
	if err := ascending(out, "baseline output"); err != nil {
		return BaselineResult{}, err
	}
	n := len(out)
	res := BaselineResult{
		T: out, Current: make([]float64, n), Mean: make([]float64, n), Std: make([]float64, n),
		Days: make([]int, n), Ratio: make([]float64, n), Z: make([]float64, n),
		Status: make([]Status, n), Reason: make([]BaselineReason, n),
	}
	ht, hv := history.T, history.V
	windows := newDayWindows(history, opt.Days, opt.Window)
	means := make([]float64, 0, opt.Days)
	cur, lastValid := 0, -1 // cur: first index with T > t
	runStart, inRun := int64(0), false
	for j, t := range out {
		// Current value.
		for cur < len(ht) && ht[cur] <= t {
			if !math.IsNaN(hv[cur]) {
				lastValid = cur
			}
			cur++
		}
		current := math.NaN()
		if lastValid >= 0 {
			age := t - ht[lastValid]
			if age == 0 || age < opt.CurrentLookback.Milliseconds() {
				current = hv[lastValid]
			}
		}
		res.Current[j] = current

		means = windows.means(t, means[:0])
		k := len(means)
		res.Days[j] = k
		mean, std := meanStd(means)
		res.Mean[j], res.Std[j] = mean, std
		ratio, z := math.NaN(), math.NaN()
		if mean != 0 && !math.IsNaN(mean) && !math.IsNaN(current) {
			ratio = current / mean
		}
		if std > 0 && !math.IsNaN(current) {
			z = (current - mean) / std
		}
		res.Ratio[j], res.Z[j] = ratio, z

		res.Reason[j] = unjudged(current, k, mean, opt.MinDays)
		judged := res.Reason[j] == ReasonNone
		if judged && ratio > opt.P1Ratio {
			if !inRun {
				runStart, inRun = t, true
			}
		} else {
			inRun = false
		}
		switch {
		case judged && ratio > opt.P0Ratio:
			res.Status[j] = StatusP0
		case inRun && t-runStart >= opt.For.Milliseconds():
			res.Status[j] = StatusP1
		}
	}
	return res, nil
}

// dayWindows finds the mean of each previous day's window around an output time: prefix sums
// of the non-NaN history values and counts, and per day two pointers that only move forward,
// so each window costs O(1) over ascending output times.
type dayWindows struct {
	t          []int64
	sum        []float64
	cnt        []int32
	lo, hi     []int // per day: first index with T >= window start, first with T > window end
	dayMs, win int64
}

func newDayWindows(h Series, days int, window time.Duration) *dayWindows {
	w := &dayWindows{
		t: h.T, sum: make([]float64, len(h.V)+1), cnt: make([]int32, len(h.V)+1),
		lo: make([]int, days), hi: make([]int, days),
		dayMs: day.Milliseconds(), win: window.Milliseconds(),
	}
	for i, v := range h.V {
		w.sum[i+1], w.cnt[i+1] = w.sum[i], w.cnt[i]
		if !math.IsNaN(v) {
			w.sum[i+1] += v
			w.cnt[i+1]++
		}
	}
	return w
}

// means appends to into the mean of every previous day whose window around t holds a sample.
func (w *dayWindows) means(t int64, into []float64) []float64 {
	for d := range w.lo {
		center := t - int64(d+1)*w.dayMs
		from, to := center-w.win, center+w.win
		for w.lo[d] < len(w.t) && w.t[w.lo[d]] < from {
			w.lo[d]++
		}
		if w.hi[d] < w.lo[d] {
			w.hi[d] = w.lo[d]
		}
		for w.hi[d] < len(w.t) && w.t[w.hi[d]] <= to {
			w.hi[d]++
		}
		if c := w.cnt[w.hi[d]] - w.cnt[w.lo[d]]; c > 0 {
			into = append(into, (w.sum[w.hi[d]]-w.sum[w.lo[d]])/float64(c))
		}
	}
	return into
}

// meanStd is the plain mean of the day-means (NaN for none) and their sample standard
// deviation (n−1; NaN below two).
func meanStd(means []float64) (mean, std float64) {
	mean, std = math.NaN(), math.NaN()
	k := len(means)
	if k > 0 {
		s := 0.0
		for _, m := range means {
			s += m
		}
		mean = s / float64(k)
	}
	if k > 1 {
		ss := 0.0
		for _, m := range means {
			ss += (m - mean) * (m - mean)
		}
		std = math.Sqrt(ss / float64(k-1))
	}
	return mean, std
}

// unjudged says why a point is not judged, or ReasonNone.
func unjudged(current float64, days int, mean float64, minDays int) BaselineReason {
	switch {
	case math.IsNaN(current):
		return ReasonNoCurrent
	case days < minDays:
		return ReasonFewDays
	case mean == 0:
		return ReasonZeroBaseline
	}
	return ReasonNone
}
