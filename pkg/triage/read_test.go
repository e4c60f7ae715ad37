package triage

import (
	"math"
	"testing"
	"time"
)

// TestIdleAtEnd: a GPU is idle at the window's end when its utilisation sits at zero from some
// point of the window to its last point there, over two points or more; a single zero is one
// scrape's blip, and a GPU that went back to work is not idle.
func TestIdleAtEnd(t *testing.T) {
	from := time.Unix(1_800_000_000, 0)
	to := from.Add(5 * time.Minute)
	ts := func(n int) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = from.Add(time.Duration(i) * time.Minute).UnixMilli()
		}
		return out
	}
	nan := math.NaN()
	for _, c := range []struct {
		name string
		v    []float64
		want bool
	}{
		{"idle through the window", []float64{0, 0, 0, 0, 0, 0}, true},
		{"stopped in the window", []float64{0.8, 0.8, 0.8, 0.8, 0, 0}, true},
		{"one zero at the end", []float64{0.8, 0.8, 0.8, 0.8, 0.8, 0}, false},
		{"back at work", []float64{0.8, 0, 0, 0, 0.7, 0.8}, false},
		{"a gap in the series does not end the run", []float64{0.8, 0.8, 0, nan, 0, nan}, true},
		{"the point at from is before the window", []float64{0, 0.8, 0.8, 0.8, 0.8, 0.8}, false},
		{"working", []float64{0.8, 0.8, 0.8, 0.8, 0.8, 0.8}, false},
	} {
		if got := idleAtEnd(ts(len(c.v)), c.v, from, to); got != c.want {
			t.Errorf("%s: idleAtEnd %v, want %v", c.name, got, c.want)
		}
	}
}
