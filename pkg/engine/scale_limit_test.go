package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// historyGate holds the baseline's previous-days read (its days told apart by dayLabel) until
// the current latency read's answer has been read, and records how the previous-days read
// ended.
type historyGate struct {
	on          bool
	currentOnce sync.Once
	currentDone chan struct{}
	mu          sync.Mutex
	history     []error // one per previous-days read: nil when its answer was read whole
	exprs       []string
}

func promQL(r *http.Request) string {
	if q := r.URL.Query().Get("query"); q != "" {
		return q
	}
	if r.Body == nil {
		return ""
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	form, _ := url.ParseQuery(string(body))
	return form.Get("query")
}

func (g *historyGate) RoundTrip(r *http.Request) (*http.Response, error) {
	expr := promQL(r)
	if !g.on || expr == "" {
		return http.DefaultTransport.RoundTrip(r)
	}
	g.mu.Lock()
	g.exprs = append(g.exprs, expr)
	g.mu.Unlock()
	if !strings.Contains(expr, dayLabel) { // the current read and its warm-up reads
		if !strings.Contains(expr, "histogram_quantile") {
			return http.DefaultTransport.RoundTrip(r)
		}
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			g.currentOnce.Do(func() { close(g.currentDone) })
			return resp, err
		}
		resp.Body = &closeHook{ReadCloser: resp.Body, fn: func() { g.currentOnce.Do(func() { close(g.currentDone) }) }}
		return resp, nil
	}
	select {
	case <-g.currentDone:
	case <-r.Context().Done():
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		g.record(err)
		return nil, err
	}
	resp.Body = &bodyEnd{ReadCloser: resp.Body, g: g}
	return resp, nil
}

func (g *historyGate) record(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.history = append(g.history, err)
}

// bodyEnd records how a previous-days answer ended: read whole (nil) or cut.
type bodyEnd struct {
	io.ReadCloser
	g    *historyGate
	done bool
}

func (b *bodyEnd) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		if errors.Is(err, io.EOF) {
			err = nil
		}
		b.g.record(err)
	}
	return n, err
}

func (b *bodyEnd) Close() error {
	if !b.done {
		b.done = true
		b.g.record(errors.New("closed before its end"))
	}
	return b.ReadCloser.Close()
}

type closeHook struct {
	io.ReadCloser
	fn func()
}

func (c *closeHook) Close() error { err := c.ReadCloser.Close(); c.fn(); return err }

// A baseline that would pass the series limit is refused as soon as the current read tells how
// many series it would return, with the limit named and how to narrow the query, and its
// previous days' read (the costly part: two minutes at 300 instances, docs/benchmarks.md) is
// cancelled instead of run to the end. The answer's size is the unrestricted answer's.
func TestBaselineOverSeriesLimitRefusedBeforeHistory(t *testing.T) {
	dir, s := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	gate := &historyGate{currentDone: make(chan struct{})}
	c, err := prom.New(srv.URL, &http.Client{Transport: gate})
	if err != nil {
		t.Fatal(err)
	}
	end := s.End()
	const raw = `{"queryType":"baseline","quantile":0.95,"days":7,"window":"10m","by":"instance"}`
	q, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	rng := Range{Start: end.Add(-time.Hour), End: end, MinStep: time.Minute}
	run := func(l Limits) (*Result, error) {
		e, err := New(context.Background(), Config{Prom: c, WarmupWindow: 2 * time.Minute, Limits: l, Now: func() time.Time { return end }})
		if err != nil {
			t.Fatal(err)
		}
		return e.Run(context.Background(), q, rng)
	}
	whole, err := run(Limits{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(whole.Series)
	if n < 2*len(baselineSeries) {
		t.Fatalf("the per-instance baseline returned %d series: want several groups", n)
	}
	gate.on = true
	_, err = run(Limits{MaxSeries: len(baselineSeries)})
	var le *LimitError
	want := fmt.Sprintf("the query would return %d series, more than the limit of %d: choose fewer models, versions or instances", n, len(baselineSeries))
	if !errors.As(err, &le) || err.Error() != want {
		t.Fatalf("got %v, want the limit error %q", err, want)
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	if len(gate.history) == 0 {
		t.Fatalf("no previous-days read was sent: %q", gate.exprs)
	}
	for _, herr := range gate.history {
		if !errors.Is(herr, context.Canceled) {
			t.Errorf("a previous-days read ended with %v: want it cancelled by the refusal (reads: %q)", herr, gate.exprs)
		}
	}
}
