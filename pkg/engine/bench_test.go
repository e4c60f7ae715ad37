package engine

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// Benchmarks on the test bed's real Prometheus; docs/benchmarks.md records a run. Absolute
// times depend on the machine, the ratios between sub-benchmarks of one run are the result.

// countingTransport counts the bytes of requests sent and responses read, and the wall time
// during which at least one request is in flight (from sending it to the end of its body).
type countingTransport struct {
	sent, received atomic.Int64
	mu             sync.Mutex
	inflight       int
	since          time.Time
	busy           time.Duration
}

func (c *countingTransport) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight == 0 {
		c.since = time.Now()
	}
	c.inflight++
}

func (c *countingTransport) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight--
	if c.inflight == 0 {
		c.busy += time.Since(c.since)
	}
}

func (c *countingTransport) busyTime() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.busy
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	n := int64(len(r.URL.RawQuery))
	if r.ContentLength > 0 {
		n += r.ContentLength
	}
	c.sent.Add(n)
	c.start()
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		c.end()
		return nil, err
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, c: c}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	c    *countingTransport
	done sync.Once
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.received.Add(int64(n))
	if err != nil {
		b.done.Do(b.c.end)
	}
	return n, err
}

func (b *countingBody) Close() error {
	b.done.Do(b.c.end)
	return b.ReadCloser.Close()
}

type benchBed struct {
	e  *Engine
	c  *prom.Client
	ct *countingTransport
	s  *testbed.Scenario
}

func startBenchBed(b *testing.B) benchBed {
	b.Helper()
	dir, s := tbtest.TSDB(b)
	srv := promtest.Start(b, promtest.Options{DataDir: dir})
	ct := &countingTransport{}
	c, err := prom.New(srv.URL, &http.Client{Transport: ct})
	if err != nil {
		b.Fatal(err)
	}
	p, _ := profile.ByName("custom")
	return benchBed{e: &Engine{Prom: c, Profile: p}, c: c, ct: ct, s: s}
}

// benchRanges are panel ranges ending inside the queue surge: one hour at 15 s, six hours at
// 1 m, a week at 5 m.
func benchRanges(s *testbed.Scenario) []struct {
	name string
	r    Range
} {
	surge, _ := s.Incident(testbed.QueueSurge)
	end := surge.Start.Add(15 * time.Minute)
	return []struct {
		name string
		r    Range
	}{
		{"1h@15s", Range{Start: end.Add(-time.Hour), End: end, MinStep: 15 * time.Second}},
		{"6h@1m", Range{Start: end.Add(-6 * time.Hour), End: end, MinStep: time.Minute}},
		{"7d@5m", Range{Start: end.Add(-7 * 24 * time.Hour), End: end, MinStep: 5 * time.Minute}},
	}
}

// pureBaselineExpr is the baseline ratio in PromQL alone: the current P95 over the mean of seven
// subqueries, each the average P95 over the ±window stretch of one previous day, evaluated at
// the panel step.
func pureBaselineExpr(selection string, step, window time.Duration) string {
	p95 := `histogram_quantile(0.95, sum by (model_name, model_version, le) (rate(inference_latency_seconds_bucket{` + selection + `}[5m])))`
	terms := make([]string, 7)
	for d := 1; d <= 7; d++ {
		offset := time.Duration(d)*24*time.Hour - window
		terms[d-1] = fmt.Sprintf("avg_over_time(%s[%s:%s] offset %s)", p95, formatDuration(2*window), formatDuration(step), formatDuration(offset))
	}
	return p95 + " / ((" + strings.Join(terms, " + ") + ") / 7)"
}

// BenchmarkBaseline compares the engine's baseline query with the pure-PromQL formulation of the
// same ratio on the same Prometheus: wall time and bytes on the wire per query.
func BenchmarkBaseline(b *testing.B) {
	bb := startBenchBed(b)
	const selection = `model_name="recsys-ranker"`
	for _, rg := range benchRanges(bb.s) {
		g, err := newGrid(rg.r, DefaultLimits)
		if err != nil {
			b.Fatal(err)
		}
		for _, filter := range []bool{true, false} {
			raw := fmt.Sprintf(`{"queryType":"baseline","model":"recsys-ranker","warmupFilter":%v}`, filter)
			q, err := Parse([]byte(raw))
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/engine/warmupFilter=%v", rg.name, filter), func(b *testing.B) {
				bb.ct.sent.Store(0)
				bb.ct.received.Store(0)
				points := 0
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					res, err := bb.e.Run(context.Background(), q, rg.r)
					if err != nil {
						b.Fatal(err)
					}
					points = 0
					for _, s := range res.Series {
						points += len(s.T)
					}
				}
				b.ReportMetric(float64(bb.ct.received.Load())/float64(b.N), "resp-B/op")
				b.ReportMetric(float64(bb.ct.sent.Load())/float64(b.N), "req-B/op")
				b.ReportMetric(float64(points), "points/op")
			})
		}
		// A panel refreshed (or an alert rule evaluated) every minute: the range moves forward
		// by a minute each time, the history cache holds what the previous query read.
		q, err := Parse([]byte(`{"queryType":"baseline","model":"recsys-ranker"}`))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(rg.name+"/engine/refresh-1m", func(b *testing.B) {
			e := *bb.e
			e.History = NewHistoryCache(0)
			if _, err := e.Run(context.Background(), q, rg.r); err != nil {
				b.Fatal(err)
			}
			bb.ct.sent.Store(0)
			bb.ct.received.Store(0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := rg.r
				r.Start, r.End = r.Start.Add(time.Duration(i+1)*time.Minute), r.End.Add(time.Duration(i+1)*time.Minute)
				if _, err := e.Run(context.Background(), q, r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(bb.ct.received.Load())/float64(b.N), "resp-B/op")
			b.ReportMetric(float64(bb.ct.sent.Load())/float64(b.N), "req-B/op")
		})
		expr := pureBaselineExpr(selection, g.step, 10*time.Minute)
		b.Run(rg.name+"/pure-promql", func(b *testing.B) {
			bb.ct.sent.Store(0)
			bb.ct.received.Store(0)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				res, err := bb.c.QueryRange(context.Background(), prom.RangeQuery{Expr: expr, Start: time.UnixMilli(g.start), End: time.UnixMilli(g.end), Step: g.step})
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Series) == 0 {
					b.Fatal("the pure-PromQL baseline returned nothing")
				}
			}
			b.ReportMetric(float64(bb.ct.received.Load())/float64(b.N), "resp-B/op")
			b.ReportMetric(float64(bb.ct.sent.Load())/float64(b.N), "req-B/op")
		})
	}
}

// BenchmarkDerivedOverRoundTrip measures, per query type, the whole engine query against the
// Prometheus round trips it sends (the same expressions over the same range, concurrently as
// the engine sends them, answers decoded by the same client). The difference is the engine's
// own work: conversion, warm-up masks, sums, quantiles, the derived series. Allocations are
// reported per output point.
func BenchmarkDerivedOverRoundTrip(b *testing.B) {
	bb := startBenchBed(b)
	rg := benchRanges(bb.s)[1] // six hours at 1 m
	for _, typ := range []string{"latency", "split", "jitter", "baseline", "throughput", "errors"} {
		q, err := Parse([]byte(fmt.Sprintf(`{"queryType":%q}`, typ)))
		if err != nil {
			b.Fatal(err)
		}
		first, err := bb.e.Run(context.Background(), q, rg.r)
		if err != nil {
			b.Fatal(err)
		}
		points := 0
		for _, s := range first.Series {
			points += len(s.T)
		}
		b.Run(typ+"/engine", func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime()
			busy := bb.ct.busyTime()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := bb.e.Run(context.Background(), q, rg.r); err != nil {
					b.Fatal(err)
				}
			}
			// Within the same runs: the time spent waiting on Prometheus (requests in flight)
			// and the rest, which is the engine's own work (answer decoding included).
			wall, http := time.Since(start), bb.ct.busyTime()-busy
			b.ReportMetric(float64(http.Microseconds())/1e3/float64(b.N), "http-ms/op")
			b.ReportMetric(100*float64(wall-http)/float64(http), "%-on-top")
			b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(points), "points/op")
			b.ReportMetric(float64(testing.AllocsPerRun(1, func() { _, _ = bb.e.Run(context.Background(), q, rg.r) }))/float64(points), "allocs/point")
		})
		// The round trips: the engine's own queries, each over the range it used.
		x, err := bb.e.newExec(q.Common, bb.e.Profile, rg.r)
		if err != nil {
			b.Fatal(err)
		}
		calls := roundTrips(first, x, typ)
		b.Run(typ+"/roundtrip", func(b *testing.B) {
			b.ReportAllocs()
			run := func(ctx context.Context, c call) error {
				_, err := bb.c.QueryRange(ctx, prom.RangeQuery{Expr: c.expr, Start: time.UnixMilli(c.from), End: time.UnixMilli(c.to), Step: c.step})
				return err
			}
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				// As the engine sends them: the warm-up signals, then the data; the previous
				// days alongside.
				err := all(context.Background(),
					func(ctx context.Context) error {
						for _, c := range calls {
							if c.phase == 0 {
								if err := run(ctx, c); err != nil {
									return err
								}
							}
						}
						for _, c := range calls {
							if c.phase == 1 {
								if err := run(ctx, c); err != nil {
									return err
								}
							}
						}
						return nil
					},
					func(ctx context.Context) error {
						for _, c := range calls {
							if c.phase == 2 {
								if err := run(ctx, c); err != nil {
									return err
								}
							}
						}
						return nil
					})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the CPU time this process has used (user + system), in ns: the engine's side of a
// query, whatever Prometheus (another process) spends.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

type call struct {
	expr     string
	from, to int64
	phase    int // 0 warm-up signals, 1 data, 2 previous days (concurrent with 0 and 1)
	step     time.Duration
}

// roundTrips rebuilds the range of each query the engine sent: the padded fetch grid, except the
// baseline's previous days (the ±window stretch, shifted by offsets).
func roundTrips(res *Result, x *Exec, typ string) []call {
	if typ == "split" {
		x.SetPadding(derive.DefaultSplitOptions().BaselineWindow)
	}
	grid := x.fetchGrid()
	var out []call
	for _, expr := range res.Queries {
		c := call{expr: expr, from: grid[0], to: grid[len(grid)-1], phase: 1, step: x.g.step}
		if strings.Contains(expr, signalLabel) {
			c.phase = 0
		}
		if strings.Contains(expr, dayLabel) {
			c.phase = 2
			win, hs := (10 * time.Minute).Milliseconds(), historyStep.Milliseconds()
			c.from, c.to, c.step = floorTo(x.g.start-win, hs), ceilTo(x.g.end+win, hs), historyStep
		}
		out = append(out, c)
	}
	return out
}
