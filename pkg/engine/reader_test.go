package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
)

// TestReaderChunksAndLimits reads a range longer than Prometheus' 11,000 points per query from
// the test bed's history: two queries, counted, joined into one series per model with every
// point once and in order; an engine whose series limit or sample limit the answer exceeds
// refuses it with a message naming the limits.
func TestReaderChunksAndLimits(t *testing.T) {
	b := startGPUBed(t, testbed.TSDBOptions{}, "custom")
	to := testbed.DefaultEnd
	from := to.Add(-8*24*time.Hour + time.Hour)
	const expr = `sum by (model_name) (inference_requests_total)`
	points := int(to.Sub(from)/time.Minute) + 1
	if points <= prometheusMaxPoints {
		t.Fatalf("%d points fit one query", points)
	}
	r := b.e.Reader()
	series, err := r.RuleSeries(context.Background(), expr, from, to, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Queries(); n != 2 {
		t.Errorf("%d Prometheus queries for %d points, want 2", n, points)
	}
	if len(series) != len(b.s.Models()) {
		t.Fatalf("%d series, want one per model (%d)", len(series), len(b.s.Models()))
	}
	for _, s := range series {
		if len(s.T) != points || len(s.V) != points {
			t.Errorf("%s: %d points, want %d", Labels(s.Labels), len(s.T), points)
			continue
		}
		for i := 1; i < len(s.T); i++ {
			if s.T[i]-s.T[i-1] != time.Minute.Milliseconds() {
				t.Fatalf("%s: points %d and %d are %d ms apart", Labels(s.Labels), i-1, i, s.T[i]-s.T[i-1])
			}
		}
	}

	for _, lim := range []Limits{{MaxSeries: 1}, {MaxSamples: prometheusMaxPoints}} {
		e := *b.e
		e.Limits = lim
		_, err := e.Reader().RuleSeries(context.Background(), expr, from, to, time.Minute)
		var le *LimitError
		if !errors.As(err, &le) || !strings.Contains(le.Msg, "the limits are") {
			t.Errorf("limits %+v: %v, want a limit error naming the limits", lim, err)
		}
	}
}
