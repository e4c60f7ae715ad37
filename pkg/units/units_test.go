package units

import (
	"math"
	"testing"
)

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		s    float64
		want string
	}{
		{0.0042, "4.20 ms"}, {0.0304, "30.4 ms"}, {0.85, "850.0 ms"}, {12.34, "12.34 s"}, {120, "2m0s"}, {5400, "1h30m0s"},
		{-0.5, "-500.0 ms"}, {math.NaN(), "-"}, {math.Inf(1), "-"},
	} {
		if got := Seconds(tc.s); got != tc.want {
			t.Errorf("Seconds(%g) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestValue(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		v    *float64
		unit string
		want string
	}{
		{nil, "s", "-"}, {f(120), "s", "2m0s"}, {f(0.125), "percentunit", "12.5 %"}, {f(132.44), "reqps", "132.4 req/s"},
		{f(3), "requests", "3"}, {f(0.4765), "", "0.4765"}, {f(2), "", "2"}, {f(math.NaN()), "", "-"},
	} {
		if got := Value(tc.v, tc.unit); got != tc.want {
			t.Errorf("Value(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}
