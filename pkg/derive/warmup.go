package derive

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// DefaultWarmupWindow is how long after a (re)start an instance's samples
// count as warm-up.
const DefaultWarmupWindow = 2 * time.Minute

// WarmReason is a set of reasons why an instance is warming at a point; zero
// means steady state.
type WarmReason uint8

// Warm-up reasons (bit flags; several may hold at once).
const (
	WarmNotReady     WarmReason = 1 << iota // load state says not ready
	WarmJustReady                           // within the window after not ready → ready
	WarmRestart                             // within the window after process start
	WarmFirstSeen                           // within the window after the instance (re)appeared
	WarmCounterReset                        // within the window after a counter reset
)

var warmNames = []struct {
	r    WarmReason
	name string
}{
	{WarmNotReady, "model not ready"},
	{WarmJustReady, "model just became ready"},
	{WarmRestart, "process restarted"},
	{WarmFirstSeen, "instance appeared"},
	{WarmCounterReset, "counter reset"},
}

func (r WarmReason) String() string {
	if r == 0 {
		return "steady"
	}
	var parts []string
	for _, w := range warmNames {
		if r&w.r != 0 {
			parts = append(parts, w.name)
		}
	}
	return strings.Join(parts, ", ")
}

// InstanceSignals are what is known about one instance's lifecycle, on the
// grid of the mask. Every field is optional; a zero Series means the engine
// does not export that signal.
type InstanceSignals struct {
	// Ready: the load state (model_loading_status or the engine's own), 1
	// ready, 0 not ready, NaN unknown. Values below 0.5 count as not ready;
	// unknown is not treated as not ready.
	Ready Series
	// StartTime: process_start_time_seconds (Unix seconds). Each distinct
	// value is a process start; the window runs from that instant.
	StartTime Series
	// Presence: any series of the instance (its request rate, up == 1 …).
	// The instance (re)appears at a present point after an absent one, except
	// at the first grid point (where nothing is known about before).
	Presence Series
	// Resets: timestamps (Unix ms) where one of the instance's counters was
	// seen to reset (see CounterResets); the window runs from each.
	Resets []int64
}

// Mask marks, per grid point, why an instance is warming (0 = steady).
type Mask []WarmReason

// Warming reports whether point i is warm-up.
func (m Mask) Warming(i int) bool { return m[i] != 0 }

// WarmupMask computes the warm-up mask of one instance on the timestamps t.
// A point is warming when the instance is not ready, or it lies in
// [e, e + window) after an event e: the process start (StartTime value), the
// first ready sample after not-ready ones (the first requests after a reload
// are slow), the instance's (re)appearance, or a counter reset. A reset or
// appearance is only seen at the first sample after it, so its window is
// counted from that sample; the true restart was at most one step earlier.
// window 0 means DefaultWarmupWindow. Work is linear in points plus events.
func WarmupMask(t []int64, sig InstanceSignals, window time.Duration) (Mask, error) {
	if window == 0 {
		window = DefaultWarmupWindow
	}
	if window < 0 {
		return nil, fmt.Errorf("warm-up window must be positive, got %s", window)
	}
	if err := ascending(t, "warm-up grid"); err != nil {
		return nil, err
	}
	for _, s := range []struct {
		name string
		s    Series
	}{{"ready", sig.Ready}, {"start time", sig.StartTime}, {"presence", sig.Presence}} {
		if s.s.Empty() {
			continue
		}
		if err := sameGrid(Series{T: t, V: make([]float64, len(t))}, s.s); err != nil {
			return nil, fmt.Errorf("warm-up %s signal: %w", s.name, err)
		}
	}
	mask := make(Mask, len(t))
	w := window.Milliseconds()
	mark := func(from int64, r WarmReason) {
		i := sort.Search(len(t), func(i int) bool { return t[i] >= from })
		for ; i < len(t) && t[i]-from < w; i++ {
			mask[i] |= r
		}
	}
	at := func(s Series, i int) float64 {
		if s.Empty() {
			return math.NaN()
		}
		return s.V[i]
	}

	lastReady := math.NaN()
	lastStart := math.NaN()
	wasPresent := false
	for i, ts := range t {
		ready := at(sig.Ready, i)
		if !math.IsNaN(ready) {
			if ready < 0.5 {
				mask[i] |= WarmNotReady
			} else if lastReady < 0.5 { // false when lastReady is NaN
				mark(ts, WarmJustReady)
			}
			lastReady = ready
		}
		start := at(sig.StartTime, i)
		if !math.IsNaN(start) && start != lastStart {
			mark(int64(math.Round(start*1000)), WarmRestart)
			lastStart = start
		}
		present := !math.IsNaN(ready) || !math.IsNaN(start) || !math.IsNaN(at(sig.Presence, i))
		if present && !wasPresent && i > 0 {
			mark(ts, WarmFirstSeen)
		}
		wasPresent = present
	}
	for _, r := range sig.Resets {
		mark(r, WarmCounterReset)
	}
	return mask, nil
}

// Apply returns a copy of s with the warming points set to NaN (recorded
// elsewhere, never used for alerting). s must be on the mask's grid.
func (m Mask) Apply(s Series) (Series, error) {
	if len(s.V) != len(m) || len(s.T) != len(m) {
		return Series{}, fmt.Errorf("%w: mask has %d points, series %s has %d", ErrGrid, len(m), labelString(s.Labels), len(s.V))
	}
	out := Series{Labels: s.Labels, T: s.T, V: make([]float64, len(s.V))}
	for i, v := range s.V {
		if m[i] != 0 {
			v = math.NaN()
		}
		out.V[i] = v
	}
	return out, nil
}

// WarmInterval is a run of warming points, for annotations.
type WarmInterval struct {
	Interval
	Reason WarmReason // union of the reasons inside the run
}

// Intervals returns the runs of warming points on the timestamps t (the
// mask's grid); Start and End are the first and last warming point.
func (m Mask) Intervals(t []int64) []WarmInterval {
	var out []WarmInterval
	in := false
	var cur WarmInterval
	for i := range m {
		if i >= len(t) {
			break
		}
		if m[i] != 0 {
			if !in {
				cur = WarmInterval{Interval: Interval{Start: t[i]}}
				in = true
			}
			cur.End = t[i]
			cur.Reason |= m[i]
			continue
		}
		if in {
			out = append(out, cur)
			in = false
		}
	}
	if in {
		out = append(out, cur)
	}
	return out
}
