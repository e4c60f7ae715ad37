package engine

import (
	"context"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// rangeStatuses counts the HTTP statuses of the range queries a client sends.
type rangeStatuses struct {
	mu sync.Mutex
	n  map[int]int
}

func (c *rangeStatuses) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && strings.HasSuffix(r.URL.Path, "/api/v1/query_range") {
		c.mu.Lock()
		c.n[resp.StatusCode]++
		c.mu.Unlock()
	}
	return resp, err
}

// splitNoticeRE reads the split notice: how many reads, how many parts, and the limit named.
var splitNoticeRE = regexp.MustCompile(`^(a read was|(\d+) reads were) split into (\d+) parts in time because the store refused (it|them) whole at (the store's limit on samples .*?); the parts'`)

// A read the store refuses for its limit on samples loaded at once (--query.max-samples) is
// read in halves in time, recursively, and merged: the per-instance baseline over 6 hours on a
// Prometheus holding at most 20,000 samples at once (its current latency read holds about
// 61,000, its previous days' read about 71,000: Prometheus' own stats=all peakSamples) equals,
// value for value, the answer of a Prometheus without that limit, and says once how many
// parts it took. The store's refusals are counted: each refusal turns one part into two, so
// there are exactly as many 422 answers as parts minus split reads. It fails without the split
// (the previous days' read comes back refused). Under a limit no part of a few
// steps fits, the store's refusal comes back named, with how to narrow the query.
func TestReadSplitAtStoreSampleLimit(t *testing.T) {
	dir, s := tbtest.TSDB(t)
	lowDir, _ := tbtest.TSDB(t)
	tinyDir, _ := tbtest.TSDB(t)
	full := promtest.Start(t, promtest.Options{DataDir: dir})
	low := promtest.Start(t, promtest.Options{DataDir: lowDir, ExtraArgs: []string{"--query.max-samples=20000"}})
	tiny := promtest.Start(t, promtest.Options{DataDir: tinyDir, ExtraArgs: []string{"--query.max-samples=600"}})
	checkSplitRead(t, s.End(), full.URL, low.URL, tiny.URL, prom.StoreLimitSamples)
}

// checkSplitRead runs the per-instance baseline over the 6 hours before end on the store
// without a sample limit (full), under a limit its reads pass only in parts (low), and under
// one no part of a few steps fits (tiny).
func checkSplitRead(t *testing.T, end time.Time, fullURL, lowURL, tinyURL string, limit prom.StoreLimit) {
	t.Helper()
	q, err := Parse([]byte(`{"queryType":"baseline","quantile":0.95,"days":7,"window":"10m","by":"instance"}`))
	if err != nil {
		t.Fatal(err)
	}
	run := func(url string) (*Result, map[int]int, error) {
		st := &rangeStatuses{n: map[int]int{}}
		c, err := prom.New(url, &http.Client{Transport: st})
		if err != nil {
			t.Fatal(err)
		}
		e, err := New(context.Background(), Config{Prom: c, WarmupWindow: 2 * time.Minute, Now: func() time.Time { return end }})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(context.Background(), q, Range{Start: end.Add(-6 * time.Hour), End: end, MinStep: time.Minute})
		return res, st.n, err
	}
	want, wantStatus, err := run(fullURL)
	if err != nil {
		t.Fatal(err)
	}
	got, gotStatus, err := run(lowURL)
	if err != nil {
		t.Fatalf("under the lowered limit: %v", err)
	}
	if wantStatus[http.StatusUnprocessableEntity] != 0 || len(wantStatus) != 1 {
		t.Fatalf("without the limit: statuses %v, want only 200", wantStatus)
	}
	refused := gotStatus[http.StatusUnprocessableEntity]
	if refused == 0 {
		t.Fatalf("under the limit: statuses %v, want the store to refuse the unsplit reads", gotStatus)
	}

	// The notice: once, naming the limit, and counting the parts the store answered.
	var notes []string
	for _, n := range got.Notices {
		if m := splitNoticeRE.FindStringSubmatch(n.Text); m != nil {
			if n.Severity != Info {
				t.Errorf("split notice severity %s, want info", n.Severity)
			}
			reads := 1
			if m[2] != "" {
				reads, _ = strconv.Atoi(m[2])
			}
			parts, _ := strconv.Atoi(m[3])
			if m[5] != limit.String() {
				t.Errorf("notice names %q, want %q", m[5], limit)
			}
			if parts-reads != refused || gotStatus[http.StatusOK]-wantStatus[http.StatusOK] != parts-reads {
				t.Errorf("notice says %d reads in %d parts; the store refused %d and answered %d range queries (%d without the limit)",
					reads, parts, refused, gotStatus[http.StatusOK], wantStatus[http.StatusOK])
			}
			if reads < 2 {
				t.Errorf("%d reads split, want the current and the previous days' reads both", reads)
			}
			notes = append(notes, n.Text)
			continue
		}
		if !slices.Contains(want.Notices, n) {
			t.Errorf("notice %q not in the unlimited answer", n.Text)
		}
	}
	if len(notes) != 1 || len(got.Notices) != len(want.Notices)+1 {
		t.Fatalf("notices %v, want the unlimited answer's %v and one split notice", got.Notices, want.Notices)
	}
	t.Log(notes[0])

	// The answer, value for value.
	if len(got.Series) != len(want.Series) || len(want.Series) < 8 {
		t.Fatalf("%d series, want %d (and at least 8)", len(got.Series), len(want.Series))
	}
	values := 0
	for i, w := range want.Series {
		g := got.Series[i]
		if g.Name != w.Name || labelsText(g.Labels) != labelsText(w.Labels) || !slices.Equal(g.T, w.T) || len(g.V) != len(w.V) {
			t.Fatalf("series %d: %s %v, want %s %v on the same grid", i, g.Name, g.Labels, w.Name, w.Labels)
		}
		for j := range w.V {
			if math.Float64bits(g.V[j]) != math.Float64bits(w.V[j]) && !(math.IsNaN(g.V[j]) && math.IsNaN(w.V[j])) {
				t.Fatalf("series %s %v at %d: %v, want %v", w.Name, w.Labels, w.T[j], g.V[j], w.V[j])
			}
			if !math.IsNaN(w.V[j]) {
				values++
			}
		}
	}
	if values < 1000 {
		t.Fatalf("%d values compared, want the baseline's hours of them", values)
	}

	// Below the smallest part: the store's own refusal, named, with how to narrow.
	_, tinyStatus, err := run(tinyURL)
	if err == nil || prom.StoreLimitOf(err) != limit || !strings.Contains(err.Error(), limit.String()) || !strings.Contains(err.Error(), "narrow the query") {
		t.Fatalf("under the tiny limit: %v, want the store's limit named with how to narrow", err)
	}
	if tinyStatus[http.StatusUnprocessableEntity] < 2 {
		t.Errorf("under the tiny limit: statuses %v, want the read split before giving up", tinyStatus)
	}
}

// Halves cover the span exactly, on its step, each at least minSplitPoints steps; a span
// shorter than twice that is not split.
func TestSpanHalves(t *testing.T) {
	const step = 60_000
	for n := int64(1); n <= 40; n++ {
		s := span{from: 1_000 * step, to: (1_000 + n - 1) * step}
		a, b, ok := s.halves(step)
		if ok != (n >= 2*minSplitPoints) {
			t.Fatalf("%d steps: split %v", n, ok)
		}
		if !ok {
			continue
		}
		na, nb := (a.to-a.from)/step+1, (b.to-b.from)/step+1
		if a.from != s.from || b.to != s.to || b.from != a.to+step || na+nb != n || na < minSplitPoints || nb < minSplitPoints || (a.to-a.from)%step != 0 {
			t.Fatalf("%d steps: %v %v", n, a, b)
		}
	}
}
