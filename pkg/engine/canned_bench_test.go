package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/triage"
)

// hold serves, from now on, every answer recorded since the last start from memory, at once
// (no store, no file read): what remains of a run is the engine's own work.
func (w *wire) hold(b *testing.B) {
	b.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on = false
	w.canned, w.misses = map[string]cannedAnswer{}, 0
	for k, a := range w.answers {
		body, err := os.ReadFile(a.path)
		if err != nil {
			b.Fatal(err)
		}
		os.Remove(a.path)
		a.body, a.path = body, ""
		w.canned[k] = a
	}
	w.answers = nil
}

// release ends hold; it returns how many requests were not among those held.
func (w *wire) release() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	misses := w.misses
	w.canned, w.misses = nil, 0
	return misses
}

// BenchmarkCanned times the engine's own work on one panel per query type of the overview
// dashboard (as BenchmarkScale picks them) and on triage: each item runs once against a real
// Prometheus holding the fleet at the first scale of INFERSCOPE_BENCH_SCALES (1× by default),
// its answers recorded, then b.N times with every answer served at once from memory —
// decoding, aligning, merging and deriving, no store. It is BenchmarkScale's canned run made
// repeatable, so that -cpuprofile and -memprofile show where that work goes:
//
//	INFERSCOPE_BENCH_SCALES=10 go test -run '^$' -bench 'BenchmarkCanned/type_gpu$' -benchmem -cpuprofile cpu.out ./pkg/engine/
func BenchmarkCanned(b *testing.B) {
	factor := 1
	if v := os.Getenv(ScalesEnv); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(strings.Split(v, ",")[0]))
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a fleet scale", ScalesEnv, v)
		}
		factor = n
	}
	e, w, _, groups := scaledEngine(b, factor)
	end := testbed.DefaultEnd
	rng := engine.Range{Start: end.Add(-6 * time.Hour), End: end, MinStep: time.Minute}
	type item struct {
		name string
		fn   func(context.Context) error
	}
	var items []item
	seen := map[string]bool{}
	for _, t := range overviewTargets(b) {
		var q struct {
			QueryType string `json:"queryType"`
		}
		_ = json.Unmarshal([]byte(t), &q)
		if seen[q.QueryType] {
			continue
		}
		seen[q.QueryType] = true
		query, err := engine.Parse([]byte(t))
		if err != nil {
			b.Fatal(err)
		}
		items = append(items, item{"type " + q.QueryType, func(ctx context.Context) error { return dumpResult(e.Run(ctx, query, rng)) }})
	}
	for _, t := range cannedExtra {
		query, err := engine.Parse([]byte(t))
		if err != nil {
			b.Fatal(err)
		}
		items = append(items, item{t, func(ctx context.Context) error { return dumpResult(e.Run(ctx, query, rng)) }})
	}
	surge, _ := groups[0].Incident(testbed.QueueSurge)
	items = append(items, item{"triage (queue surge)", func(ctx context.Context) error {
		_, err := triage.Diagnose(ctx, e, triage.Options{Model: surge.Model, Instance: surge.Instance,
			From: surge.Start.Add(5 * time.Minute), To: surge.Start.Add(20 * time.Minute)}.WithDefaults(end))
		return err
	}})
	for _, it := range items {
		b.Run(it.name, func(b *testing.B) {
			ctx := b.Context()
			w.start()
			dumpTo = cannedDumpFile(b, factor)
			err := it.fn(ctx) // recorded from Prometheus
			dumpTo = nil
			if err != nil {
				b.Fatal(err)
			}
			w.stop()
			w.hold(b)
			defer w.release()
			if err := it.fn(ctx); err != nil { // once unmeasured: caches warm as on a running data source
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			c0 := selfCPU()
			for b.Loop() {
				if err := it.fn(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// The process's CPU time (garbage collection included) does not grow with the
			// machine's load as the wall time does.
			b.ReportMetric(float64(selfCPU()-c0)/float64(b.N), "cpu-ns/op")
			if n := w.release(); n > 0 {
				b.Fatalf("%d requests were not among the recorded answers", n)
			}
		})
	}
}

// cannedExtra are queries of the GPU types beyond the dashboard's: every measurement, and
// memory with the KV-cache share.
var cannedExtra = []string{`{"queryType":"gpu"}`, `{"queryType":"gpu","metrics":["memory"],"kvCacheMemory":true}`}

// DumpEnv names a directory where BenchmarkCanned writes each engine item's answer, the values'
// bits in hex, so that two builds can be shown to answer bit for bit the same (diff -r).
const DumpEnv = "INFERSCOPE_BENCH_DUMP"

// dumpTo, while set, receives the answer dumpResult is given (the recorded run only).
var dumpTo io.Writer

func cannedDumpFile(b *testing.B, factor int) io.Writer {
	dir := os.Getenv(DumpEnv)
	if dir == "" {
		return nil
	}
	name := strings.NewReplacer("/", "_", " ", "_", `"`, "", "{", "", "}", "", ":", "=", ",", "+", "[", "", "]", "").Replace(b.Name())
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%dx-%s.txt", factor, name)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// dumpResult writes res to dumpTo when set: each series' name, labels, unit and values' bits,
// then the notices.
func dumpResult(res *engine.Result, err error) error {
	if err != nil || dumpTo == nil {
		return err
	}
	for _, s := range res.Series {
		keys := make([]string, 0, len(s.Labels))
		for k, v := range s.Labels {
			keys = append(keys, k+"="+v)
		}
		slices.Sort(keys)
		fmt.Fprintf(dumpTo, "%s %q %s %v T=%v V=", s.Name, s.DisplayName, s.Unit, keys, s.T)
		for _, v := range s.V {
			fmt.Fprintf(dumpTo, "%x,", math.Float64bits(v))
		}
		fmt.Fprintln(dumpTo)
	}
	for _, n := range res.Notices {
		fmt.Fprintf(dumpTo, "notice %v %s\n", n.Severity, n.Text)
	}
	return nil
}
