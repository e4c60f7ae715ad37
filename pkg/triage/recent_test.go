package triage

import (
	"math"
	"testing"
	"time"
)

// series builds a one-minute grid ending at `to` from the values, oldest first.
func series(to time.Time, vals ...float64) ([]int64, []float64) {
	t := make([]int64, len(vals))
	for i := range vals {
		t[i] = to.Add(-time.Duration(len(vals)-1-i) * time.Minute).UnixMilli()
	}
	return t, vals
}

func flat(n int, x float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// TestRecentChange: the change point inside a short window is the first point of the trailing
// run past the segment rule (1.5× the level and 5 ms above it) that reaches the window's end.
func TestRecentChange(t *testing.T) {
	to := time.Date(2026, 11, 23, 4, 15, 0, 0, time.UTC)
	from := to.Add(-15 * time.Minute)
	cases := []struct {
		name   string
		vals   []float64 // 30 points: the 15 minutes before the window, then the window
		ok     bool
		at     time.Time
		points int
		level  float64
	}{
		{"two minutes at 3×", append(flat(28, 0.020), 0.060, 0.060), true, to.Add(-time.Minute), 2, 0.020},
		{"one minute, too recent to be sure", append(flat(29, 0.020), 0.050), true, to, 1, 0.020},
		{"five minutes rising", append(flat(25, 0.020), 0.035, 0.05, 0.07, 0.08, 0.09), true, to.Add(-4 * time.Minute), 5, 0.020},
		{"nothing changed", flat(30, 0.020), false, time.Time{}, 0, 0},
		{"under the absolute line (1 ms → 4 ms)", append(flat(28, 0.001), 0.004, 0.004), false, time.Time{}, 0, 0},
		{"under the ratio (×1.4)", append(flat(28, 0.020), 0.028, 0.028), false, time.Time{}, 0, 0},
		{"recovered before the window's end", append(append(flat(24, 0.020), 0.06, 0.06, 0.06), 0.02, 0.02, 0.02), false, time.Time{}, 0, 0},
		{"older than the window: the window's means describe it", append(flat(12, 0.020), flat(18, 0.060)...), false, time.Time{}, 0, 0},
	}
	for _, c := range cases {
		tt, vv := series(to, c.vals...)
		at, level, now, n, ok := recentChange(tt, vv, from, to)
		if ok != c.ok {
			t.Errorf("%s: ok %v, want %v (at %s level %g)", c.name, ok, c.ok, at, level)
			continue
		}
		if !ok {
			continue
		}
		if !at.Equal(c.at) || n != c.points || math.Abs(level-c.level) > 1e-12 || !(now > level) {
			t.Errorf("%s: at %s points %d level %g now %g, want at %s points %d level %g", c.name, at, n, level, now, c.at, c.points, c.level)
		}
	}
}

// TestRecentSpanComparesAfterTheChange: the window after a change point two minutes old holds
// the change past the segment rule where the whole 15-minute window's mean does not — what the
// triage compares with the hour before decides whether the change is seen at all.
func TestRecentSpanComparesAfterTheChange(t *testing.T) {
	to := time.Date(2026, 11, 23, 4, 15, 0, 0, time.UTC)
	from := to.Add(-15 * time.Minute)
	before := from.Add(-time.Hour)
	// 60 points of the hour before and 15 of the window at 20 ms, the last two at 80 ms.
	vals := append(flat(73, 0.020), 0.080, 0.080)
	tt, vv := series(to, vals...)
	whole := pointsPair(tt, vv, before, from, to, mean)
	if r := ratio(whole.Now, whole.Before); r >= riseRatio {
		t.Fatalf("whole window: %.2f×, the test wants a change the window's mean hides", r)
	}
	at, _, _, _, ok := recentChange(tt, vv, from, to)
	if !ok {
		t.Fatal("no change point")
	}
	sp := recentSpan(at, time.Minute, from, to)
	if want := (Span{to.Add(-2 * time.Minute), to}); sp != want {
		t.Fatalf("span %v, want %v", sp, want)
	}
	after := pointsPair(tt, vv, sp.Start.Add(-time.Hour), sp.Start, sp.End, mean)
	if r := ratio(after.Now, after.Before); r < riseRatio || after.Now-after.Before < riseAbs {
		t.Errorf("after the change: %.2f× (%g → %g), want past the segment rule", r, after.Before, after.Now)
	}
	// A change point at the window's last point still leaves minWindow to compare.
	if sp := recentSpan(to, time.Minute, from, to); sp.End.Sub(sp.Start) != minWindow {
		t.Errorf("span at the end %v, want %s", sp, minWindow)
	}
}
