package testbed

import (
	"slices"
	"testing"
)

// The history's parts cover every sample once, in order; there are at least as many as the
// workers, none is over the cap, and their sizes differ by one at most.
func TestHistoryParts(t *testing.T) {
	for _, tc := range []struct {
		name                string
		n, workers, maxPart int
		want                [][2]int
	}{
		{"none", 0, 2, 10, nil},
		{"one sample", 1, 2, 10, [][2]int{{0, 0}}},
		{"under the cap: one part a worker", 10, 2, 10, [][2]int{{0, 4}, {5, 9}}},
		{"over the cap", 25, 2, 10, [][2]int{{0, 7}, {8, 15}, {16, 24}}},
		{"four workers", 8, 4, 100, [][2]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}}},
		// The test bed's 8 days at 1 m stay in two parts; 9 days at 15 s go in nine.
		{"8 days at 1 m", 8 * 1440, 2, 5760, [][2]int{{0, 5759}, {5760, 11519}}},
	} {
		if got := historyParts(tc.n, tc.workers, tc.maxPart); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, n := range []int{1, 2, 3, 100, 5761, 9*5760 + 1, 12961} {
		parts := historyParts(n, 2, 5760)
		if len(parts) < min(n, 2) || parts[0][0] != 0 || parts[len(parts)-1][1] != n-1 {
			t.Fatalf("n %d: %v", n, parts)
		}
		lo, hi := n, 0
		for i, p := range parts {
			size := p[1] - p[0] + 1
			lo, hi = min(lo, size), max(hi, size)
			if size > 5760 || (i > 0 && p[0] != parts[i-1][1]+1) {
				t.Errorf("n %d: part %d %v", n, i, p)
			}
		}
		if hi-lo > 1 {
			t.Errorf("n %d: parts of %d to %d samples", n, lo, hi)
		}
	}
	if got := len(historyParts(9*5760, 2, 5760)); got != 9 {
		t.Errorf("9 days at 15 s: %d parts, want 9", got)
	}
}
