package derive

import (
	"errors"
	"reflect"
	"testing"
)

func TestGridAndAlign(t *testing.T) {
	g, err := Grid(1000, 61000, 15000)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{1000, 16000, 31000, 46000, 61000}; !reflect.DeepEqual(g, want) {
		t.Errorf("Grid = %v, want %v", g, want)
	}
	if _, err := Grid(0, 10, 0); err == nil {
		t.Error("want an error for a zero step")
	}
	if _, err := Grid(10, 0, 1); err == nil {
		t.Error("want an error for end before start")
	}
	sparse := Series{T: []int64{16000, 46000, 50000}, V: []float64{2, 4, 9}}
	a := Align(sparse, g)
	checkFloats(t, "aligned", a.V, []float64{nan, 2, nan, 4, nan}, 0)
}

func TestValidateAndSlice(t *testing.T) {
	if err := (Series{T: []int64{1, 2}, V: []float64{1}}).Validate(); err == nil {
		t.Error("want an error for length mismatch")
	}
	if err := (Series{T: []int64{2, 2}, V: []float64{1, 1}}).Validate(); err == nil {
		t.Error("want an error for repeated timestamps")
	}
	s := series(grid(0, 10, 5), 0, 1, 2, 3, 4)
	sl := s.Slice(10, 30)
	if !reflect.DeepEqual(sl.T, []int64{10, 20, 30}) {
		t.Errorf("Slice T = %v", sl.T)
	}
	if got := s.Slice(100, 200); got.Len() != 0 {
		t.Errorf("Slice outside = %v", got)
	}
	if got := s.Slice(30, 10); got.Len() != 0 {
		t.Errorf("inverted Slice = %v", got)
	}
}

func TestSumBy(t *testing.T) {
	ts := grid(0, minute, 3)
	mk := func(model, inst string, v ...float64) Series {
		return Series{Labels: map[string]string{"model": model, "instance": inst}, T: ts, V: v}
	}
	got, err := SumBy([]Series{
		mk("b", "1", 1, nan, nan),
		mk("a", "1", 1, 2, nan),
		mk("a", "2", 10, nan, nan),
		mk("b", "2", 5, 5, nan),
	}, []string{"model"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Labels["model"] != "a" || got[1].Labels["model"] != "b" {
		t.Fatalf("groups = %v", got)
	}
	checkFloats(t, "a", got[0].V, []float64{11, 2, nan}, 0)
	checkFloats(t, "b", got[1].V, []float64{6, 5, nan}, 0)
	if _, ok := got[0].Labels["instance"]; ok {
		t.Error("instance label should be aggregated away")
	}

	other := Series{T: grid(1, minute, 3), V: []float64{1, 2, 3}}
	if _, err := SumBy([]Series{mk("a", "1", 1, 2, 3), other}, nil); !errors.Is(err, ErrGrid) {
		t.Errorf("want ErrGrid, got %v", err)
	}
}

func TestSumAndDifference(t *testing.T) {
	ts := grid(0, minute, 4)
	s, err := Sum(series(ts, 1, nan, 3, nan), series(ts, 1, 2, nan, nan))
	if err != nil {
		t.Fatal(err)
	}
	checkFloats(t, "sum", s.V, []float64{2, 2, 3, nan}, 0)
	if _, err := Sum(); err == nil {
		t.Error("want an error for no series")
	}
	d, err := Difference(series(ts, 0.25, 0.05, nan, 0.1), series(ts, 0.05, 0.06, 0.1, nan))
	if err != nil {
		t.Fatal(err)
	}
	checkFloats(t, "difference", d.V, []float64{0.2, 0, nan, nan}, 1e-15)
}

func TestRunsAbove(t *testing.T) {
	ts := grid(0, 10, 9)
	got := RunsAbove(series(ts, 6, 7, 5, 8, nan, 9, 9, 1, 6), 5)
	want := []Interval{{0, 10}, {30, 30}, {50, 60}, {80, 80}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RunsAbove = %v, want %v", got, want)
	}
	if got := RunsAbove(Series{}, 5); got != nil {
		t.Errorf("empty = %v", got)
	}
}
