package derive

import (
	"math"
	"reflect"
	"testing"
)

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	std := []Bucket{{0.1, 10}, {0.5, 50}, {1, 90}, {inf, 100}}
	tests := []struct {
		name    string
		q       float64
		buckets []Bucket
		want    float64
	}{
		{"lowest bucket interpolates from 0", 0.05, std, 0.05},
		{"inside second bucket", 0.3, std, 0.1 + 0.4*(20.0/40)},
		{"rank on a bucket edge", 0.5, std, 0.5},
		{"inside third bucket", 0.7, std, 0.5 + 0.5*(20.0/40)},
		{"rank equal to last finite count", 0.9, std, 1},
		{"rank in +Inf bucket answers last finite bound", 0.95, std, 1},
		{"q=1 answers last finite bound", 1, std, 1},
		{"q=0 with a populated first bucket", 0, std, 0},
		{"q=0 with an empty first bucket is NaN (0/0, as Prometheus)", 0, []Bucket{{0.1, 0}, {1, 10}, {inf, 10}}, nan},
		{"q below 0", -0.1, std, math.Inf(-1)},
		{"q above 1", 1.1, std, inf},
		{"q NaN", nan, std, nan},
		{"no buckets", 0.5, nil, nan},
		{"+Inf bucket only", 0.5, []Bucket{{inf, 100}}, nan},
		{"no +Inf bucket", 0.5, []Bucket{{0.1, 10}, {1, 100}}, nan},
		{"zero observations", 0.5, []Bucket{{0.1, 0}, {1, 0}, {inf, 0}}, nan},
		{"all counts absent", 0.5, []Bucket{{0.1, nan}, {inf, nan}}, nan},
		{"unsorted input", 0.3, []Bucket{{inf, 100}, {0.5, 50}, {0.1, 10}, {1, 90}}, 0.1 + 0.4*(20.0/40)},
		{"equal bounds are added", 0.3, []Bucket{{0.1, 4}, {0.5, 50}, {0.1, 6}, {inf, 100}, {1, 90}}, 0.1 + 0.4*(20.0/40)},
		// Fixed counts are 10, 10, 20, 20.
		{"non-monotonic: rank in first bucket", 0.5, []Bucket{{0.1, 10}, {0.5, 8}, {1, 20}, {inf, 20}}, 0.1},
		{"non-monotonic: rank after the dip", 0.75, []Bucket{{0.1, 10}, {0.5, 8}, {1, 20}, {inf, 20}}, 0.5 + 0.5*(5.0/10)},
		{"decreasing +Inf bucket uses the running maximum", 0.5, []Bucket{{0.1, 10}, {1, 20}, {inf, 15}}, 0.1 + 0.9*(0.0/10)},
		{"absent bucket is skipped", 0.5, []Bucket{{0.1, 10}, {0.5, nan}, {1, 90}, {inf, 100}}, 0.1 + 0.9*(40.0/80)},
		{"lowest bound <= 0 is answered as is", 0.1, []Bucket{{-1, 5}, {0, 10}, {1, 20}, {inf, 20}}, -1},
		{"single finite bucket", 0.5, []Bucket{{0.25, 4}, {inf, 4}}, 0.125},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]Bucket(nil), tc.buckets...)
			got := HistogramQuantile(tc.q, in)
			if !same(got, tc.want, 1e-12) {
				t.Errorf("HistogramQuantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
			if !reflect.DeepEqual(fmtBuckets(in), fmtBuckets(tc.buckets)) {
				t.Errorf("input was modified: %v", in)
			}
		})
	}
}

func TestHistogramsAndQuantileSeries(t *testing.T) {
	ts := grid(0, minute, 3)
	mk := func(le, inst string, v ...float64) Series {
		return Series{Labels: map[string]string{"le": le, "model_name": "rec", "instance": inst}, T: ts, V: v}
	}
	// Two instances; "b" is warming at point 1 (NaN after masking) and
	// absent at point 2. The "1.0" series coalesces with "1".
	in := []Series{
		mk("0.1", "a", 1, 1, 2), mk("0.5", "a", 5, 5, 6), mk("1", "a", 9, 9, 10), mk("+Inf", "a", 10, 10, 10),
		mk("0.1", "b", 3, nan, nan), mk("0.5", "b", 5, nan, nan), mk("1.0", "b", 10, nan, nan), mk("+Inf", "b", 10, nan, nan),
	}
	summed, err := SumBy(in, []string{"model_name", "le"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := QuantileSeries(0.5, summed)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Labels, map[string]string{"model_name": "rec"}) {
		t.Fatalf("got %d series %v, want one for model rec", len(got), got)
	}
	// Point 0: buckets 0.1:4, 0.5:10, 1:19, +Inf:20 → rank 10 → 0.5 exactly.
	// Point 1: only "a": 0.1:1, 0.5:5, 1:9, +Inf:10 → rank 5 → 0.5.
	// Point 2: 0.1:2, 0.5:6, 1:10, +Inf:10 → rank 5 → 0.1 + 0.4·3/4 = 0.4.
	checkFloats(t, "p50", got[0].V, []float64{0.5, 0.5, 0.4}, 1e-12)

	p90, _ := QuantileSeries(0.9, summed)
	// Point 0: rank 18 → bucket 1 (19) → 0.5 + 0.5·(18−10)/(19−10).
	checkFloats(t, "p90", p90[0].V, []float64{0.5 + 0.5*8/9, 0.5 + 0.5*4/4, 0.5 + 0.5*3/4}, 1e-12)
}

func TestHistogramsErrors(t *testing.T) {
	ts := grid(0, minute, 2)
	if _, err := Histograms([]Series{{Labels: map[string]string{"model": "x"}, T: ts, V: []float64{1, 2}}}); err == nil {
		t.Error("want an error for a series without le")
	}
	if _, err := Histograms([]Series{{Labels: map[string]string{"le": "fast"}, T: ts, V: []float64{1, 2}}}); err == nil {
		t.Error("want an error for an unparseable le")
	}
	a := Series{Labels: map[string]string{"le": "1"}, T: ts, V: []float64{1, 2}}
	b := Series{Labels: map[string]string{"le": "+Inf"}, T: grid(5, minute, 2), V: []float64{1, 2}}
	if _, err := Histograms([]Series{a, b}); err == nil {
		t.Error("want an error for series on different grids")
	}
	hs, err := Histograms(nil)
	if err != nil || len(hs) != 0 {
		t.Errorf("empty input: got %v, %v", hs, err)
	}
}
