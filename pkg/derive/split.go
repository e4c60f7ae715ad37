package derive

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Segment is one part of a request's latency.
type Segment int

// The latency segments, in the order of Split's per-segment arrays.
const (
	Queue Segment = iota
	Compute
	Network
	numSegments
)

func (s Segment) String() string {
	switch s {
	case Queue:
		return "queue"
	case Compute:
		return "compute"
	case Network:
		return "network"
	}
	return fmt.Sprintf("segment(%d)", int(s))
}

// Regime says which segment drives latency at a point. Its numeric value is
// what the regime series carries.
type Regime int

// Regimes. The numbers are part of the public contract (panels map them).
const (
	Balanced         Regime = 0
	QueueDominated   Regime = 1
	ComputeDominated Regime = 2
	NetworkDominated Regime = 3
)

func (r Regime) String() string {
	switch r {
	case Balanced:
		return "balanced"
	case QueueDominated:
		return "queue-dominated"
	case ComputeDominated:
		return "compute-dominated"
	case NetworkDominated:
		return "network-dominated"
	}
	return fmt.Sprintf("regime(%d)", int(r))
}

// RegimeName names a value of a regime series; NaN is "no data".
func RegimeName(v float64) string {
	if math.IsNaN(v) {
		return "no data"
	}
	return Regime(int(v)).String()
}

func segmentRegime(s Segment) Regime { return Regime(int(s) + 1) }

// SplitOptions tune the regime rule. Zero fields take the defaults.
type SplitOptions struct {
	// BaselineWindow is how far back each segment's own baseline reaches:
	// the mean of the segment's samples in [t − BaselineWindow, t). Default 1h.
	BaselineWindow time.Duration
	// RiseRatio: a segment is rising when its value exceeds RiseRatio times
	// its baseline. Default 1.5.
	RiseRatio float64
	// MinRise: a rising segment must also be at least this much above its
	// baseline, in the series' unit (seconds), so that a 1 ms queue going to
	// 2 ms on a 100 ms service is not a regime change. Default 0.005 (5 ms).
	MinRise float64
	// MinRiseShare lowers MinRise for a fast service: a rise of this share of
	// the total's baseline counts where that is less than MinRise, but never
	// under MinStep (RiseFloor). On a 20 ms embedder a 3 ms queue step is 15 %
	// on every request, which its users feel; 5 ms would hide it. Default 0.1
	// (half the 1.2× of a latency change); negative keeps MinRise alone.
	MinRiseShare float64
	// DominantShare: the share a segment needs to dominate, of the total
	// increase over baselines (change rule) or of the total latency (level
	// rule). Default 0.6.
	DominantShare float64
}

// DefaultSplitOptions returns the documented defaults.
func DefaultSplitOptions() SplitOptions {
	return SplitOptions{BaselineWindow: time.Hour, RiseRatio: 1.5, MinRise: 0.005, MinRiseShare: 0.1, DominantShare: 0.6}
}

// MinStep is the smallest rise that counts however fast the service: latency targets are
// not set under a millisecond.
const MinStep = 0.001

// RiseFloor is the smallest rise of a segment that counts on a service whose time per request
// (all its segments) has the baseline base, in seconds: MinRise, or MinRiseShare of base where
// that is less, never under MinStep (nor above MinRise). Without a positive base it is MinRise.
// o must hold its defaults (DefaultSplitOptions, or the options SplitLatency was given).
func (o SplitOptions) RiseFloor(base float64) float64 {
	if !(base > 0) || !(o.MinRiseShare > 0) {
		return o.MinRise
	}
	return math.Min(o.MinRise, math.Max(MinStep, o.MinRiseShare*base))
}

func (o SplitOptions) withDefaults() (SplitOptions, error) {
	d := DefaultSplitOptions()
	if o.BaselineWindow == 0 {
		o.BaselineWindow = d.BaselineWindow
	}
	if o.RiseRatio == 0 {
		o.RiseRatio = d.RiseRatio
	}
	if o.MinRise == 0 {
		o.MinRise = d.MinRise
	}
	if o.MinRiseShare == 0 {
		o.MinRiseShare = d.MinRiseShare
	}
	if o.DominantShare == 0 {
		o.DominantShare = d.DominantShare
	}
	switch {
	case o.BaselineWindow < 0:
		return o, fmt.Errorf("split baseline window must be positive, got %s", o.BaselineWindow)
	case !(o.RiseRatio > 1):
		return o, fmt.Errorf("split rise ratio must be above 1, got %g", o.RiseRatio)
	case o.MinRise < 0 || math.IsNaN(o.MinRise):
		return o, fmt.Errorf("split minimum rise must not be negative, got %g", o.MinRise)
	case math.IsNaN(o.MinRiseShare) || o.MinRiseShare >= 1:
		return o, fmt.Errorf("split minimum rise share must be under 1 (negative turns it off), got %g", o.MinRiseShare)
	case !(o.DominantShare > 0.5 && o.DominantShare <= 1):
		return o, fmt.Errorf("split dominant share must be in (0.5, 1], got %g", o.DominantShare)
	}
	return o, nil
}

// SplitInput holds the segment time series of one model/version (and,
// optionally, instance), all on one grid and in the same unit (seconds).
// Queue and Compute are required; Network is optional (zero Series = no
// gateway data), typically Difference(gateway upstream, service total).
type SplitInput struct {
	Queue, Compute, Network Series
}

// Split is the per-point decomposition of latency.
type Split struct {
	T     []int64
	Total []float64 // sum of the segments present at the point
	// Share[seg][i] is the segment's fraction of Total; nil for Network when
	// no network series was given.
	Share [numSegments][]float64
	// Baseline[seg][i] is the segment's own trailing mean used by the change rule.
	Baseline [numSegments][]float64
	// Regime[i] is a Regime number, NaN where queue or compute has no sample.
	Regime []float64
}

// SplitLatency decomposes latency into queue, compute and (optionally)
// network time and classifies every point with this rule, which encodes the
// reading rules of the field report ("stable compute + rising queue → too
// much concurrency / bad batching", "stable queue + rising compute → GPU
// contention or weight swapping", "gateway upstream minus service time →
// network"):
//
//  1. Each segment has a baseline b: the mean of its own samples in
//     [t − BaselineWindow, t). Its increase is max(0, v − b). It is rising
//     when v > RiseRatio·b and v − b >= RiseFloor(the sum of the present
//     segments' baselines): 5 ms, or a tenth of a fast service's time.
//  2. Change rule: if any segment is rising, the regime is the segment with
//     the largest increase, provided that segment is rising and its increase
//     is at least DominantShare of the summed increases of all segments.
//     Otherwise (several segments moving together) the regime is balanced.
//     So a rising queue over a stable compute is queue-dominated, a rising
//     compute over a stable queue is compute-dominated, and a rising
//     gateway gap is network-dominated.
//  3. Level rule: if nothing is rising (steady state, or no baseline yet), the
//     regime is the segment whose share of the total is at least
//     DominantShare, else balanced. This also keeps a long-lasting surge,
//     one that the trailing baseline has absorbed, attributed to the segment
//     that still holds most of the time.
//
// Points where queue or compute is NaN have NaN shares and a NaN regime
// ("no data"); a NaN network sample leaves the point split between queue and
// compute. Negative segment values are treated as zero. A zero total gives
// NaN shares and regime. Work is linear in the number of points.
func SplitLatency(in SplitInput, opt SplitOptions) (Split, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return Split{}, err
	}
	hasNet := !in.Network.Empty()
	segs := []Series{in.Queue, in.Compute}
	if hasNet {
		segs = append(segs, in.Network)
	}
	if err := sameGrid(segs...); err != nil {
		return Split{}, fmt.Errorf("split: %w", err)
	}
	if err := ascending(in.Queue.T, "split"); err != nil {
		return Split{}, err
	}
	n := len(in.Queue.T)
	out := Split{T: in.Queue.T, Total: make([]float64, n), Regime: make([]float64, n)}
	windows := make([]*trailingMean, len(segs))
	for k, s := range segs {
		out.Share[k] = make([]float64, n)
		out.Baseline[k] = make([]float64, n)
		windows[k] = newTrailingMean(s, opt.BaselineWindow.Milliseconds())
	}
	var v, base [numSegments]float64
	for i := 0; i < n; i++ {
		present := [numSegments]bool{}
		total := 0.0
		for k, s := range segs {
			base[k] = windows[k].before(i)
			out.Baseline[k][i] = base[k]
			x := s.V[i]
			if math.IsNaN(x) {
				continue
			}
			if x < 0 {
				x = 0
			}
			v[k] = x
			present[k] = true
			total += x
		}
		if !present[Queue] || !present[Compute] || !(total > 0) {
			out.Total[i] = math.NaN()
			if present[Queue] && present[Compute] {
				out.Total[i] = total
			}
			for k := range segs {
				out.Share[k][i] = math.NaN()
			}
			out.Regime[i] = math.NaN()
			continue
		}
		out.Total[i] = total
		for k := range segs {
			if present[k] {
				out.Share[k][i] = v[k] / total
			} else {
				out.Share[k][i] = math.NaN()
			}
		}
		out.Regime[i] = float64(classify(v, base, present, len(segs), total, opt))
	}
	return out, nil
}

func classify(v, base [numSegments]float64, present [numSegments]bool, nseg int, total float64, opt SplitOptions) Regime {
	var inc [numSegments]float64
	var rising [numSegments]bool
	anyRising := false
	sumInc, baseTotal := 0.0, 0.0
	for k := 0; k < nseg; k++ {
		if present[k] && !math.IsNaN(base[k]) {
			baseTotal += base[k]
		}
	}
	minRise := opt.RiseFloor(baseTotal)
	for k := 0; k < nseg; k++ {
		if !present[k] || math.IsNaN(base[k]) {
			continue
		}
		if d := v[k] - base[k]; d > 0 {
			inc[k] = d
			sumInc += d
		}
		if v[k] > opt.RiseRatio*base[k] && v[k]-base[k] >= minRise {
			rising[k] = true
			anyRising = true
		}
	}
	if anyRising {
		top := 0
		for k := 1; k < nseg; k++ {
			if inc[k] > inc[top] {
				top = k
			}
		}
		if rising[top] && inc[top] >= opt.DominantShare*sumInc {
			return segmentRegime(Segment(top))
		}
		return Balanced
	}
	for k := 0; k < nseg; k++ {
		if present[k] && v[k] >= opt.DominantShare*total {
			return segmentRegime(Segment(k))
		}
	}
	return Balanced
}

// trailingMean answers the mean of a series' non-NaN samples in
// [T[i] − window, T[i]) with prefix sums and a moving pointer; calls must
// come with non-decreasing i.
type trailingMean struct {
	t      []int64
	sum    []float64
	count  []int32
	window int64
	lo     int
}

func newTrailingMean(s Series, window int64) *trailingMean {
	tm := &trailingMean{t: s.T, window: window, sum: make([]float64, len(s.V)+1), count: make([]int32, len(s.V)+1)}
	for i, x := range s.V {
		tm.sum[i+1], tm.count[i+1] = tm.sum[i], tm.count[i]
		if !math.IsNaN(x) {
			tm.sum[i+1] += x
			tm.count[i+1]++
		}
	}
	return tm
}

func (tm *trailingMean) before(i int) float64 {
	from := tm.t[i] - tm.window
	for tm.lo < i && tm.t[tm.lo] < from {
		tm.lo++
	}
	c := tm.count[i] - tm.count[tm.lo]
	if c == 0 {
		return math.NaN()
	}
	return (tm.sum[i] - tm.sum[tm.lo]) / float64(c)
}

// Slice returns the points with from <= T <= to, sharing the backing arrays.
func (s Split) Slice(from, to int64) Split {
	lo, hi := sliceBounds(s.T, from, to)
	out := Split{T: s.T[lo:hi], Total: s.Total[lo:hi], Regime: s.Regime[lo:hi]}
	for k := range s.Share {
		if s.Share[k] != nil {
			out.Share[k] = s.Share[k][lo:hi]
			out.Baseline[k] = s.Baseline[k][lo:hi]
		}
	}
	return out
}

func sliceBounds(t []int64, from, to int64) (int, int) {
	lo := sort.Search(len(t), func(i int) bool { return t[i] >= from })
	hi := sort.Search(len(t), func(i int) bool { return t[i] > to })
	if hi < lo {
		hi = lo
	}
	return lo, hi
}
