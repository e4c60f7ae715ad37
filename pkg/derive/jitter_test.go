package derive

import (
	"math"
	"reflect"
	"testing"
)

func TestJitter(t *testing.T) {
	ts := grid(0, minute, 7)
	p99 := series(ts, 0.1, 0.5, nan, 0.2, 0.3, math.Inf(1), 0.24)
	p50 := series(ts, 0.02, 0.05, 0.1, 0, nan, 0.01, 0.04)
	got, err := Jitter(p99, p50)
	if err != nil {
		t.Fatal(err)
	}
	// P50 of 0 or NaN, P99 NaN or an infinite ratio: "no data", never ±Inf.
	checkFloats(t, "jitter", got.V, []float64{5, 10, nan, nan, nan, nan, 6}, 1e-12)
	runs := JitterRuns(got, 0)
	if want := []Interval{{ts[1], ts[1]}, {ts[6], ts[6]}}; !reflect.DeepEqual(runs, want) {
		t.Errorf("runs above the default 5 = %v, want %v", runs, want)
	}
	if runs := JitterRuns(got, 4); !reflect.DeepEqual(runs, []Interval{{ts[0], ts[1]}, {ts[6], ts[6]}}) {
		t.Errorf("runs above 4 = %v", runs)
	}
	if _, err := Jitter(p99, series(grid(1, minute, 7), 1, 1, 1, 1, 1, 1, 1)); err == nil {
		t.Error("want an error for different grids")
	}
}
