package derive

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Series is one labelled time series. T holds Unix milliseconds in strictly
// ascending order and V the value at each timestamp; NaN in V means "no
// sample". Series that are combined point by point must share the same T.
type Series struct {
	Labels map[string]string
	T      []int64
	V      []float64
}

// Interval is a closed time range in Unix milliseconds: Start and End are the
// timestamps of the first and the last point that belong to it.
type Interval struct {
	Start, End int64
}

// ErrGrid reports series that cannot be combined point by point.
var ErrGrid = errors.New("series are not on the same timestamps")

// Validate reports a series whose slices differ in length or whose
// timestamps are not strictly ascending.
func (s Series) Validate() error {
	if len(s.T) != len(s.V) {
		return fmt.Errorf("series %s: %d timestamps but %d values", labelString(s.Labels), len(s.T), len(s.V))
	}
	for i := 1; i < len(s.T); i++ {
		if s.T[i] <= s.T[i-1] {
			return fmt.Errorf("series %s: timestamps not strictly ascending at index %d (%d after %d)",
				labelString(s.Labels), i, s.T[i], s.T[i-1])
		}
	}
	return nil
}

// Len is the number of points.
func (s Series) Len() int { return len(s.T) }

// Empty reports a series with no points; optional inputs use it for "absent".
func (s Series) Empty() bool { return len(s.T) == 0 && len(s.V) == 0 }

// Slice returns the points with from <= T <= to, sharing the backing arrays.
func (s Series) Slice(from, to int64) Series {
	lo, hi := sliceBounds(s.T, from, to)
	return Series{Labels: s.Labels, T: s.T[lo:hi], V: s.V[lo:hi]}
}

// Grid returns the timestamps start, start+step, … up to and including end,
// the grid of a Prometheus range query.
func Grid(start, end, step int64) ([]int64, error) {
	if step <= 0 {
		return nil, fmt.Errorf("grid step must be positive, got %d ms", step)
	}
	if end < start {
		return nil, fmt.Errorf("grid end %d is before start %d", end, start)
	}
	n := (end-start)/step + 1
	t := make([]int64, n)
	for i := range t {
		t[i] = start + int64(i)*step
	}
	return t, nil
}

// Align places the samples of s onto the timestamps t: a point of t takes the
// sample with exactly that timestamp, and NaN where s has none. Prometheus
// range results already sit on the query grid, with missing points omitted;
// Align restores the omitted points as NaN. Both inputs must be ascending.
func Align(s Series, t []int64) Series {
	out := Series{Labels: s.Labels, T: t, V: make([]float64, len(t))}
	j := 0
	for i, ts := range t {
		for j < len(s.T) && s.T[j] < ts {
			j++
		}
		if j < len(s.T) && s.T[j] == ts {
			out.V[i] = s.V[j]
		} else {
			out.V[i] = math.NaN()
		}
	}
	return out
}

// sameGrid checks that every series has valid lengths and the timestamps of
// the first one.
func sameGrid(ss ...Series) error {
	if len(ss) == 0 {
		return nil
	}
	ref := ss[0].T
	for _, s := range ss {
		if len(s.T) != len(s.V) {
			return fmt.Errorf("series %s: %d timestamps but %d values", labelString(s.Labels), len(s.T), len(s.V))
		}
		if len(s.T) != len(ref) {
			return fmt.Errorf("%w: %d points against %d", ErrGrid, len(s.T), len(ref))
		}
		if len(ref) > 0 && &s.T[0] == &ref[0] {
			continue
		}
		for i := range ref {
			if s.T[i] != ref[i] {
				return fmt.Errorf("%w: timestamp %d against %d at index %d", ErrGrid, s.T[i], ref[i], i)
			}
		}
	}
	return nil
}

func ascending(t []int64, what string) error {
	for i := 1; i < len(t); i++ {
		if t[i] <= t[i-1] {
			return fmt.Errorf("%s: timestamps not strictly ascending at index %d", what, i)
		}
	}
	return nil
}

func nanSlice(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

func copyLabels(l map[string]string) map[string]string {
	if l == nil {
		return nil
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// labelString renders labels as {a="1", b="2"} in key order, for messages.
func labelString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", k, l[k])
	}
	b.WriteByte('}')
	return b.String()
}

// RunsAbove returns the maximal runs of consecutive points whose value is
// above threshold. A NaN point ends a run.
func RunsAbove(s Series, threshold float64) []Interval {
	var out []Interval
	in := false
	var cur Interval
	for i, v := range s.V {
		if v > threshold { // false for NaN
			if !in {
				cur = Interval{Start: s.T[i]}
				in = true
			}
			cur.End = s.T[i]
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
