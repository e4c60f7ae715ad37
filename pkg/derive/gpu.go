package derive

import (
	"fmt"
	"math"
	"time"
)

// ForecastReason explains a forecast point.
type ForecastReason uint8

// Forecast reasons.
const (
	ForecastCrossing  ForecastReason = iota // ETA holds the seconds until the threshold
	ForecastAbove                           // already at or above the threshold: ETA 0
	ForecastNotRising                       // trend flat or falling: no crossing, ETA NaN
	ForecastNoData                          // no current sample or too few samples in the window
)

func (r ForecastReason) String() string {
	switch r {
	case ForecastCrossing:
		return "rising towards the threshold"
	case ForecastAbove:
		return "already above the threshold"
	case ForecastNotRising:
		return "not rising: no crossing predicted"
	case ForecastNoData:
		return "not enough samples to fit a trend"
	}
	return fmt.Sprintf("forecast(%d)", int(r))
}

// ForecastOptions tune MemoryForecast. Zero fields take the defaults.
type ForecastOptions struct {
	Window    time.Duration // least-squares window (t − Window, t], default 30m
	Threshold float64       // memory-used ratio to predict, default 0.92
	MinPoints int           // samples needed in the window, default 5
}

// DefaultForecastOptions returns the brief's urgent GPU memory threshold.
func DefaultForecastOptions() ForecastOptions {
	return ForecastOptions{Window: 30 * time.Minute, Threshold: 0.92, MinPoints: 5}
}

// Forecast is the time-to-threshold prediction at each point.
type Forecast struct {
	T      []int64
	Slope  []float64 // fitted trend, ratio per second; NaN without a fit
	ETA    []float64 // seconds until the threshold is crossed; see Reason
	Reason []ForecastReason
}

// MemoryForecast predicts, at each point, when a GPU's memory-used ratio
// will cross the threshold: the slope is the least-squares fit of the
// non-NaN samples in (t − Window, t], and ETA = (Threshold − current) /
// slope, where current is the sample at t. A current value at or above the
// threshold gives ETA 0; a slope <= 0 gives NaN with ForecastNotRising; no
// current sample or fewer than MinPoints samples give NaN with
// ForecastNoData. The fit slides with two pointers and running sums taken
// relative to a reference time that is re-based every window, so the cost is
// linear and the sums stay precise on month-long series.
func MemoryForecast(used Series, opt ForecastOptions) (Forecast, error) {
	d := DefaultForecastOptions()
	if opt.Window == 0 {
		opt.Window = d.Window
	}
	if opt.Threshold == 0 {
		opt.Threshold = d.Threshold
	}
	if opt.MinPoints == 0 {
		opt.MinPoints = d.MinPoints
	}
	if opt.Window < 0 || opt.MinPoints < 2 || math.IsNaN(opt.Threshold) || math.IsInf(opt.Threshold, 0) {
		return Forecast{}, fmt.Errorf("forecast needs a positive window, at least 2 points and a finite threshold")
	}
	if err := used.Validate(); err != nil {
		return Forecast{}, fmt.Errorf("forecast: %w", err)
	}
	n := len(used.T)
	f := Forecast{T: used.T, Slope: make([]float64, n), ETA: make([]float64, n), Reason: make([]ForecastReason, n)}
	w := opt.Window.Milliseconds()
	var fit slidingFit
	lo := 0
	for i, t := range used.T {
		if v := used.V[i]; !math.IsNaN(v) {
			fit.add(used.T[i], v)
		}
		for lo <= i && used.T[lo] <= t-w {
			if v := used.V[lo]; !math.IsNaN(v) {
				fit.remove(used.T[lo], v)
			}
			lo++
		}
		if fit.stale() {
			fit.rebase(used.T[lo:i+1], used.V[lo:i+1])
		}
		slope := math.NaN()
		if fit.n >= opt.MinPoints {
			slope = fit.slope()
		}
		f.Slope[i] = slope
		cur := used.V[i]
		switch {
		case math.IsNaN(cur):
			f.ETA[i], f.Reason[i] = math.NaN(), ForecastNoData
		case cur >= opt.Threshold:
			f.ETA[i], f.Reason[i] = 0, ForecastAbove
		case math.IsNaN(slope):
			f.ETA[i], f.Reason[i] = math.NaN(), ForecastNoData
		case slope <= 0:
			f.ETA[i], f.Reason[i] = math.NaN(), ForecastNotRising
		default:
			f.ETA[i], f.Reason[i] = (opt.Threshold-cur)/slope, ForecastCrossing
		}
	}
	return f, nil
}

// slidingFit keeps least-squares sums over a sliding window. Times enter as
// seconds relative to ref so the sums stay small; after as many updates as
// the window holds points it is re-based on the window's own samples, which
// bounds rounding drift and keeps the amortised cost O(1).
type slidingFit struct {
	ref              int64
	n, updates       int
	st, stt, sv, stv float64
	hasRef           bool
}

func (f *slidingFit) x(t int64) float64 { return float64(t-f.ref) / 1000 }

func (f *slidingFit) add(t int64, v float64) {
	if !f.hasRef {
		f.ref, f.hasRef = t, true
	}
	x := f.x(t)
	f.n++
	f.st += x
	f.stt += x * x
	f.sv += v
	f.stv += x * v
	f.updates++
}

func (f *slidingFit) remove(t int64, v float64) {
	x := f.x(t)
	f.n--
	f.st -= x
	f.stt -= x * x
	f.sv -= v
	f.stv -= x * v
	f.updates++
}

func (f *slidingFit) stale() bool { return f.updates > 2*f.n+16 }

func (f *slidingFit) rebase(t []int64, v []float64) {
	*f = slidingFit{}
	for i := range t {
		if !math.IsNaN(v[i]) {
			f.add(t[i], v[i])
		}
	}
	f.updates = 0
}

func (f *slidingFit) slope() float64 {
	n := float64(f.n)
	den := n*f.stt - f.st*f.st
	if !(den > 0) {
		return math.NaN()
	}
	return (n*f.stv - f.st*f.sv) / den
}

// IdleOptions tune IdleUnderTraffic. Zero fields take the defaults.
type IdleOptions struct {
	IdleFor         time.Duration // how long utilisation must stay at zero, default 10m
	Epsilon         float64       // utilisation ratio counted as zero, default 0.005
	TrafficFraction float64       // QPS must exceed this fraction of its baseline, default 0.5
}

// DefaultIdleOptions returns the brief's GPU-idle-under-traffic condition.
func DefaultIdleOptions() IdleOptions {
	return IdleOptions{IdleFor: 10 * time.Minute, Epsilon: 0.005, TrafficFraction: 0.5}
}

// IdleUnderTraffic marks (1, else 0) the points where a GPU is asleep while
// it should be working: utilisation (a ratio 0..1) has been <= Epsilon at
// every point for at least IdleFor, AND QPS > TrafficFraction × its baseline
// QPS, AND the model is ready. The last two conditions keep deploys (traffic
// drained, model loading) from firing. Unknown is never true: a NaN
// utilisation ends the idle run, and a NaN QPS, baseline or readiness makes
// the point 0. ready may be a zero Series for engines without a load signal;
// readiness is then assumed.
func IdleUnderTraffic(util, qps, qpsBaseline, ready Series, opt IdleOptions) (Series, error) {
	d := DefaultIdleOptions()
	if opt.IdleFor == 0 {
		opt.IdleFor = d.IdleFor
	}
	if opt.Epsilon == 0 {
		opt.Epsilon = d.Epsilon
	}
	if opt.TrafficFraction == 0 {
		opt.TrafficFraction = d.TrafficFraction
	}
	if opt.IdleFor < 0 || opt.Epsilon < 0 || opt.TrafficFraction < 0 {
		return Series{}, fmt.Errorf("idle-under-traffic options must not be negative")
	}
	grid := []Series{util, qps, qpsBaseline}
	if !ready.Empty() {
		grid = append(grid, ready)
	}
	if err := sameGrid(grid...); err != nil {
		return Series{}, fmt.Errorf("idle under traffic: %w", err)
	}
	if err := ascending(util.T, "idle under traffic"); err != nil {
		return Series{}, err
	}
	out := Series{Labels: copyLabels(util.Labels), T: util.T, V: make([]float64, len(util.T))}
	idleSince, idle := int64(0), false
	for i, t := range util.T {
		if u := util.V[i]; u <= opt.Epsilon { // false for NaN
			if !idle {
				idleSince, idle = t, true
			}
		} else {
			idle = false
		}
		isReady := ready.Empty() || ready.V[i] >= 0.5
		traffic := qps.V[i] > 0 && qps.V[i] > opt.TrafficFraction*qpsBaseline.V[i]
		if idle && t-idleSince >= opt.IdleFor.Milliseconds() && traffic && isReady {
			out.V[i] = 1
		}
	}
	return out, nil
}
