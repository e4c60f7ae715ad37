package derive

import (
	"math"
	"strconv"
	"testing"
)

var nan = math.NaN()

const minute = int64(60_000)

// grid returns n timestamps from start at step (ms).
func grid(start, step int64, n int) []int64 {
	t := make([]int64, n)
	for i := range t {
		t[i] = start + int64(i)*step
	}
	return t
}

func series(t []int64, v ...float64) Series {
	if len(v) != len(t) {
		panic("series: length mismatch in test data")
	}
	return Series{T: t, V: v}
}

// same compares floats treating NaN as equal to NaN and allowing tol
// relative (or absolute near zero) difference.
func same(a, b, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	d := math.Abs(a - b)
	return d <= tol || d <= tol*math.Max(math.Abs(a), math.Abs(b))
}

func checkFloats(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !same(got[i], want[i], tol) {
			t.Errorf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// fmtBuckets renders buckets so that NaN compares equal to NaN.
func fmtBuckets(b []Bucket) []string {
	out := make([]string, len(b))
	for i, x := range b {
		out[i] = strconv.FormatFloat(x.UpperBound, 'g', -1, 64) + ":" + strconv.FormatFloat(x.Count, 'g', -1, 64)
	}
	return out
}
