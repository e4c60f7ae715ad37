package backtest

import (
	"math"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
)

// The pure half of the backtest: Grafana's reduce and alert state machine, replayed on one
// series' values. No Prometheus here.

// Reduce returns, for each evaluation time evals[k] (Unix ms), what Grafana's reduce B (last,
// drop non-numbers) gives on the data query's answer for that evaluation: the last finite
// value at a timestamp in [evals[k] − lookback, evals[k]] (the query range, both ends
// inclusive as the engine's grid is), NaN when there is none (NoData). t must be ascending.
func Reduce(t []int64, v []float64, evals []int64, lookback time.Duration) []float64 {
	out := make([]float64, len(evals))
	lb := lookback.Milliseconds()
	i := -1    // last index with t[i] <= the evaluation time
	last := -1 // last index <= i with a finite value
	for k, at := range evals {
		for i+1 < len(t) && t[i+1] <= at {
			i++
			if finite(v[i]) {
				last = i
			}
		}
		if last >= 0 && t[last] >= at-lb {
			out[k] = v[last]
		} else {
			out[k] = math.NaN()
		}
	}
	return out
}

// Episode is one stretch during which a series' alert fired.
type Episode struct {
	Start, End time.Time // first Firing evaluation; the evaluation that resolved it (or the last one)
	Open       bool      // still firing at the last evaluation
	Peak       float64   // largest reduced value while firing (smallest for a "lt" condition)
}

// Simulate runs Grafana's alert state machine over one series' reduced values: Normal while the
// condition does not hold (NoData counts as OK), Pending when it starts to hold, Firing once it
// has held for `hold` (at once when hold is 0), Normal again at the first evaluation where it
// does not hold. It returns the episodes that reached Firing; pending-only ones are not.
func Simulate(evals []int64, reduced []float64, c alerting.Condition, hold time.Duration) []Episode {
	const (
		normal = iota
		pending
		firing
	)
	state := normal
	var since int64
	var cur Episode
	var out []Episode
	better := func(x, than float64) bool {
		if c.Op == alerting.OpLess {
			return x < than
		}
		return x > than
	}
	for k, at := range evals {
		x := reduced[k]
		if !c.Holds(x) {
			if state == firing {
				cur.End = time.UnixMilli(at).UTC()
				out = append(out, cur)
			}
			state = normal
			continue
		}
		if state == normal {
			state, since = pending, at
		}
		if state == pending && at-since >= hold.Milliseconds() {
			state = firing
			cur = Episode{Start: time.UnixMilli(at).UTC(), Peak: x}
			continue
		}
		if state == firing && better(x, cur.Peak) {
			cur.Peak = x
		}
	}
	if state == firing {
		cur.End, cur.Open = time.UnixMilli(evals[len(evals)-1]).UTC(), true
		out = append(out, cur)
	}
	return out
}

// EvalTimes lists the evaluation times (Unix ms) of a rule group with the given interval over
// [from, to]: every multiple of the interval in it.
func EvalTimes(from, to time.Time, interval time.Duration) []int64 {
	step := interval.Milliseconds()
	if step <= 0 {
		return nil
	}
	a := ceilTo(from.UnixMilli(), step)
	var out []int64
	for t := a; t <= to.UnixMilli(); t += step {
		out = append(out, t)
	}
	return out
}

func ceilTo(ms, step int64) int64 {
	r := ms % step
	if r == 0 {
		return ms
	}
	if ms < 0 {
		return ms - r
	}
	return ms - r + step
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
