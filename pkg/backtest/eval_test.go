package backtest

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
)

var nan = math.NaN()

func minutes(n ...int64) []int64 {
	out := make([]int64, len(n))
	for i, m := range n {
		out[i] = m * 60_000
	}
	return out
}

func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !(a[i] == b[i] || math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

func TestReduce(t *testing.T) {
	cases := []struct {
		name     string
		t        []int64
		v        []float64
		evals    []int64
		lookback time.Duration
		want     []float64
	}{
		{"last value at each evaluation", minutes(0, 1, 2, 3), []float64{1, 2, 3, 4}, minutes(0, 1, 2, 3), 10 * time.Minute, []float64{1, 2, 3, 4}},
		{"NaN is skipped for the last finite value", minutes(0, 1, 2, 3), []float64{1, nan, nan, 4}, minutes(1, 2, 3), 10 * time.Minute, []float64{1, 1, 4}},
		{"infinities are dropped like NaN", minutes(0, 1), []float64{5, math.Inf(1)}, minutes(1), 10 * time.Minute, []float64{5}},
		{"older than the lookback is NoData", minutes(0, 1, 2, 3, 4), []float64{7, nan, nan, nan, nan}, minutes(1, 2, 3, 4), 2 * time.Minute, []float64{7, 7, nan, nan}},
		{"the lookback's first point counts (inclusive)", minutes(0, 5), []float64{7, nan}, minutes(5), 5 * time.Minute, []float64{7}},
		{"no point yet", minutes(5, 6), []float64{1, 2}, minutes(3, 4, 5), 10 * time.Minute, []float64{nan, nan, 1}},
		{"evaluations between points see the earlier one", []int64{0, 120_000}, []float64{1, 2}, []int64{60_000, 120_000}, time.Hour, []float64{1, 2}},
		{"empty series", nil, nil, minutes(1, 2), time.Hour, []float64{nan, nan}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Reduce(c.t, c.v, c.evals, c.lookback); !sameFloats(got, c.want) {
				t.Errorf("Reduce = %v, want %v", got, c.want)
			}
		})
	}
}

func TestConditionHolds(t *testing.T) {
	gt := alerting.Condition{Op: alerting.OpGreater, Lo: 3}
	lt := alerting.Condition{Op: alerting.OpLess, Hi: 0.8}
	in := alerting.Condition{Op: alerting.OpWithin, Lo: 1.5, Hi: 3}
	for _, c := range []struct {
		c    alerting.Condition
		x    float64
		want bool
	}{
		{gt, 3, false}, {gt, 3.0001, true}, {gt, nan, false},
		{lt, 0.8, false}, {lt, 0.79, true}, {lt, nan, false},
		{in, 1.5, false}, {in, 1.51, true}, {in, 3, true}, {in, 3.01, false}, {in, nan, false},
	} {
		if got := c.c.Holds(c.x); got != c.want {
			t.Errorf("%s holds for %g = %v, want %v", c.c, c.x, got, c.want)
		}
	}
}

func TestSimulate(t *testing.T) {
	at := func(m int64) time.Time { return time.UnixMilli(m * 60_000).UTC() }
	gt := alerting.Condition{Op: alerting.OpGreater, Lo: 1}
	lt := alerting.Condition{Op: alerting.OpLess, Hi: 1}
	cases := []struct {
		name string
		v    []float64
		c    alerting.Condition
		hold time.Duration
		want []Episode
	}{
		{"for 0 fires at once and resolves at the first false", []float64{0, 2, 3, 0, 0}, gt, 0,
			[]Episode{{Start: at(1), End: at(3), Peak: 3}}},
		{"for 2m: pending at 1, firing at 3", []float64{0, 2, 2, 5, 2, 0}, gt, 2 * time.Minute,
			[]Episode{{Start: at(3), End: at(5), Peak: 5}}},
		{"pending only is not an episode", []float64{0, 2, 2, 0, 2, 0}, gt, 2 * time.Minute, nil},
		{"NoData resolves (OK) and restarts the hold", []float64{2, 2, nan, 2, 2, 2}, gt, time.Minute,
			[]Episode{{Start: at(1), End: at(2), Peak: 2}, {Start: at(4), End: at(5), Open: true, Peak: 2}}},
		{"still firing at the end is open", []float64{0, 0, 4}, gt, 0,
			[]Episode{{Start: at(2), End: at(2), Open: true, Peak: 4}}},
		{"lt peaks at the smallest", []float64{2, 0.5, 0.2, 0.7, 2}, lt, 0,
			[]Episode{{Start: at(1), End: at(4), Peak: 0.2}}},
		{"within leaves the range above to the other rule", []float64{2, 4, 2, 2}, alerting.Condition{Op: alerting.OpWithin, Lo: 1.5, Hi: 3}, 0,
			[]Episode{{Start: at(0), End: at(1), Peak: 2}, {Start: at(2), End: at(3), Open: true, Peak: 2}}},
		{"never holds", []float64{nan, 0, 1}, gt, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evals := make([]int64, len(c.v))
			for i := range evals {
				evals[i] = int64(i) * 60_000
			}
			got := Simulate(evals, c.v, c.c, c.hold)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Simulate =\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}

func TestEvalTimes(t *testing.T) {
	from := time.Date(2026, 11, 23, 10, 0, 30, 0, time.UTC)
	got := EvalTimes(from, from.Add(3*time.Minute), time.Minute)
	want := []int64{from.Add(30 * time.Second).UnixMilli(), from.Add(90 * time.Second).UnixMilli(), from.Add(150 * time.Second).UnixMilli()}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("EvalTimes = %v, want %v", got, want)
	}
	if n := len(EvalTimes(from.Truncate(time.Minute), from.Truncate(time.Minute).Add(7*24*time.Hour), time.Minute)); n != 7*24*60+1 {
		t.Errorf("a week at 1m: %d evaluations, want %d", n, 7*24*60+1)
	}
}
