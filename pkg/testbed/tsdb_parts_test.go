package testbed

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
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

// A history cut in more parts than workers (each worker imports several, one after another)
// reads in Prometheus as the truth does, across the parts' seams: a counter's rate over a
// window that spans three parts, and one inside a part.
func TestHistoryInManyParts(t *testing.T) {
	if testing.Short() {
		t.Skip("writes three hours of the test bed and serves them from Prometheus")
	}
	defer func(n int) { maxPartSamples = n }(maxPartSamples)
	maxPartSamples = 20 // 181 samples a series: ten parts of 18-19
	s := Default(DefaultEnd)
	opt := expo.HistoryOptions{From: s.End().Add(-3 * time.Hour), To: s.End(), Step: time.Minute, Job: "inference"}
	if got := len(historyParts(181, 4, maxPartSamples)); got != 10 {
		t.Fatalf("%d parts, want 10", got)
	}
	targets, err := s.HistoryTargets("custom", GPUNamingInferscope, opt.From, opt.To, opt.To)
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "tsdb")
	if err := BuildHistoryTSDB(t.Context(), targets, promtest.RequireBinary(t, "promtool"), dir, opt); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, "*")); len(left) != 1 {
		t.Errorf("beside the TSDB, the build left %v", left)
	}
	base := promtest.Start(t, promtest.Options{DataDir: dir}).URL
	for _, w := range []struct {
		name     string
		from, to time.Time
	}{
		{"across three parts", opt.From.Add(50 * time.Minute), opt.From.Add(110 * time.Minute)},
		{"inside a part", opt.From.Add(62 * time.Minute), opt.From.Add(70 * time.Minute)},
	} {
		expr := fmt.Sprintf("sum(rate(inference_requests_total[%dm]))", int(w.to.Sub(w.from).Minutes()))
		got := promScalar(t, base, expr, w.to)
		want := s.MeanQPS("", "", "", w.from, w.to)
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s: %s = %.9g, truth %.9g", w.name, expr, got, want)
		}
	}
}

// promScalar runs an instant query that must answer one series.
func promScalar(t *testing.T, base, expr string, at time.Time) float64 {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?" + url.Values{"query": {expr}, "time": {strconv.FormatInt(at.Unix(), 10)}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if len(body.Data.Result) != 1 {
		t.Fatalf("%s: %d series", expr, len(body.Data.Result))
	}
	v, err := strconv.ParseFloat(fmt.Sprint(body.Data.Result[0].Value[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
