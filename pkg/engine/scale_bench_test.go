package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/backtest"
	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/gate"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
	"github.com/inferscope/inferscope/pkg/triage"
)

// ScalesEnv lists the fleet scales BenchmarkScale measures (default "1").
const ScalesEnv = "INFERSCOPE_BENCH_SCALES"

// MaxSeriesEnv raises the engine's series limit (default 1,000, engine.DefaultLimits) and its
// samples limit in proportion, to measure past the refusals a large fleet meets at the default.
const MaxSeriesEnv = "INFERSCOPE_BENCH_MAX_SERIES"

func benchLimits(b *testing.B) engine.Limits {
	v := os.Getenv(MaxSeriesEnv)
	if v == "" {
		return engine.Limits{}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number of series", MaxSeriesEnv, v)
	}
	d := engine.DefaultLimits
	return engine.Limits{MaxSeries: n, MaxSamples: max(d.MaxSamples, d.MaxSamples/d.MaxSeries*n)}
}

// wire counts what crosses the HTTP connection to Prometheus and keeps each request, so the
// same PromQL can be replayed alone, and each answer, so the engine's own work can be timed on
// a store that answers at once (canned).
type wire struct {
	mu       sync.Mutex
	on       bool
	trips    int
	bytes    int64
	inFlight int
	maxIn    int
	reqs     []recorded
	answers  map[string]cannedAnswer
	// dir, when set, is where each answer's copy is written for the canned run: on disk, so the
	// copies do not count in the heap the first run measures.
	dir string
	// canned, while set, answers every request it holds at once, without Prometheus; misses
	// counts those it did not hold (sent on to Prometheus).
	canned map[string]cannedAnswer
	misses int
	served []recorded // the requests the canned run was served, in order
}

type recorded struct {
	method, url, ctype string
	body               []byte
}

type cannedAnswer struct {
	status int
	ctype  string
	path   string // the answer's bytes
	body   []byte // or the bytes themselves, held in memory (hold)
}

func (r recorded) key() string { return r.method + " " + r.url + "\n" + string(r.body) }

// params are the request's path and its parameters, from its URL and its form body.
func (r recorded) params() (string, url.Values) {
	v, _ := url.ParseQuery(string(r.body))
	u, err := url.Parse(r.url)
	if err != nil {
		return "", v
	}
	for k, vs := range u.Query() {
		v[k] = vs
	}
	return u.Path, v
}

// readAlone reads the answers to the requests given (those a canned run was served) again with
// pkg/prom's client, as a client of the raw PromQL would, placed on their grid (the cheapest
// read the client has: one float a point, no timestamps): the part of the engine's CPU that
// belongs to the round trip, which the raw PromQL's reader pays as well. Answers to other calls
// (series, label values: small) are left on the engine's side. It reads the answers' copies,
// as the canned run does.
func (w *wire) readAlone(reqs []recorded) error {
	w.mu.Lock()
	answers := w.answers
	w.mu.Unlock()
	t := &fileTransport{}
	c, err := prom.New("http://canned.invalid", &http.Client{Transport: t}, prom.MaxAnswerBytes(1<<30))
	if err != nil {
		return err
	}
	ctx := context.Background()
	for _, r := range reqs {
		a, ok := answers[r.key()]
		if !ok || a.status != http.StatusOK {
			continue
		}
		path, v := r.params()
		t.path = a.path
		var err error
		switch {
		case strings.HasSuffix(path, "/api/v1/query_range"):
			step := unixSeconds(v.Get("step")).Sub(time.Unix(0, 0))
			_, err = c.QueryRange(ctx, prom.RangeQuery{Expr: v.Get("query"), Start: unixSeconds(v.Get("start")), End: unixSeconds(v.Get("end")), Step: step, OnGrid: true})
		case strings.HasSuffix(path, "/api/v1/query"):
			_, err = c.Query(ctx, v.Get("query"), unixSeconds(v.Get("time")), 0)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// unixSeconds reads a time as pkg/prom's client writes it: seconds since the epoch, with a
// fraction (the zero time when absent).
func unixSeconds(s string) time.Time {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}
	}
	sec := math.Floor(f)
	return time.Unix(int64(sec), int64(math.Round((f-sec)*1e9))).UTC()
}

// fileTransport answers every request with the file at path.
type fileTransport struct{ path string }

func (t *fileTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := os.ReadFile(t.path)
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), Request: r}, nil
}

func (w *wire) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	req := recorded{r.Method, r.URL.String(), r.Header.Get("Content-Type"), body}
	key := req.key()
	w.mu.Lock()
	if a, ok := w.canned[key]; ok {
		w.served = append(w.served, req)
		w.mu.Unlock()
		b := a.body
		if b == nil {
			var err error
			if b, err = os.ReadFile(a.path); err != nil {
				return nil, err
			}
		}
		return &http.Response{StatusCode: a.status, Status: http.StatusText(a.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {a.ctype}}, Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), Request: r}, nil
	}
	if w.canned != nil {
		w.misses++
	}
	rec := w.on
	if rec {
		w.trips++
		w.inFlight++
		w.maxIn = max(w.maxIn, w.inFlight)
		w.reqs = append(w.reqs, req)
	}
	w.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(r)
	if rec {
		w.mu.Lock()
		w.inFlight--
		w.mu.Unlock()
	}
	if err == nil && rec {
		cb := &countingBody{ReadCloser: resp.Body, w: w, key: key, status: resp.StatusCode, ctype: resp.Header.Get("Content-Type")}
		if w.dir != "" {
			cb.copy, _ = os.CreateTemp(w.dir, "answer-*")
		}
		resp.Body = cb
	}
	return resp, err
}

// countingBody counts an answer's bytes as the engine reads them, and writes a copy (when the
// wire has a dir) that is kept, once read to its end, for the canned run.
type countingBody struct {
	io.ReadCloser
	w      *wire
	key    string
	status int
	ctype  string
	copy   *os.File
	done   bool
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if c.copy != nil && n > 0 {
		if _, werr := c.copy.Write(p[:n]); werr != nil {
			c.copy.Close()
			c.copy = nil
		}
	}
	c.w.mu.Lock()
	c.w.bytes += int64(n)
	if err == io.EOF && !c.done && c.copy != nil {
		c.done = true
		if c.copy.Close() == nil {
			if c.w.answers == nil {
				c.w.answers = map[string]cannedAnswer{}
			}
			c.w.answers[c.key] = cannedAnswer{status: c.status, ctype: c.ctype, path: c.copy.Name()}
		}
	}
	c.w.mu.Unlock()
	return n, err
}

func (c *countingBody) Close() error {
	if c.copy != nil && !c.done {
		c.copy.Close()
	}
	return c.ReadCloser.Close()
}

func (w *wire) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on, w.trips, w.bytes, w.maxIn, w.reqs, w.answers = true, 0, 0, 0, nil, nil
}

func (w *wire) stop() (trips int, bytes int64, maxIn int, reqs []recorded) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on = false
	return w.trips, w.bytes, w.maxIn, w.reqs
}

// cannedRun runs fn with every answer recorded by the last start/stop served at once (read
// from its copy, no store): the engine's own work (decoding, aligning, deriving) without the
// store's. It returns the wall time, how many requests were not among the recorded ones, and the
// requests it was served; the answers' copies stay until drop.
func (w *wire) cannedRun(fn func() error) (time.Duration, int, []recorded, error) {
	w.mu.Lock()
	w.canned, w.misses, w.served = w.answers, 0, nil
	if w.canned == nil {
		w.canned = map[string]cannedAnswer{}
	}
	w.mu.Unlock()
	t0 := time.Now()
	err := fn()
	wall := time.Since(t0)
	w.mu.Lock()
	defer w.mu.Unlock()
	served := w.served
	w.canned, w.served = nil, nil
	return wall, w.misses, served, err
}

// drop removes the recorded answers' copies.
func (w *wire) drop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.answers {
		os.Remove(a.path)
	}
	w.answers = nil
}

// heapPeak samples the live heap every few milliseconds while running; it returns the peak
// above the level before the run (after a GC).
func heapPeak(run func() error) (uint64, error) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	err := run()
	close(done)
	wg.Wait()
	if p := peak.Load(); p > base {
		return p - base, err
	}
	return 0, err
}

// replay sends the recorded requests again, straight to Prometheus, with as many in flight as
// the engine had: the raw PromQL of the same answer, run alone.
// It also returns the samples Prometheus read for them (stats=all: totalQueryableSamples, and
// the largest peakSamples), which, unlike the times, do not move with the machine's load.
func replay(reqs []recorded, parallel int) (time.Duration, int64, promStats, error) {
	var (
		mu    sync.Mutex
		total int64
		first error
		stats promStats
	)
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	start := time.Now()
	for _, r := range reqs {
		wg.Add(1)
		sem <- struct{}{}
		go func(r recorded) {
			defer wg.Done()
			defer func() { <-sem }()
			u := r.url
			if strings.Contains(u, "/api/v1/query") { // Prometheus counts the samples it read
				u += map[bool]string{true: "&", false: "?"}[strings.Contains(u, "?")] + "stats=all"
			}
			req, err := http.NewRequest(r.method, u, bytes.NewReader(r.body))
			t0 := time.Now()
			if err == nil {
				if r.ctype != "" {
					req.Header.Set("Content-Type", r.ctype)
				}
				var resp *http.Response
				if resp, err = http.DefaultClient.Do(req); err == nil {
					var n int64
					var body []byte
					body, err = io.ReadAll(resp.Body)
					n = int64(len(body))
					resp.Body.Close()
					var st struct {
						Data struct {
							Stats struct {
								Samples struct {
									TotalQueryableSamples int64 `json:"totalQueryableSamples"`
									PeakSamples           int64 `json:"peakSamples"`
								} `json:"samples"`
							} `json:"stats"`
						} `json:"data"`
					}
					if json.Unmarshal(body, &st) == nil {
						mu.Lock()
						stats.samples += st.Data.Stats.Samples.TotalQueryableSamples
						stats.peak = max(stats.peak, st.Data.Stats.Samples.PeakSamples)
						mu.Unlock()
					}
					if os.Getenv(RequestsEnv) != "" {
						printRequest(r, time.Since(t0), n, st.Data.Stats.Samples.TotalQueryableSamples, st.Data.Stats.Samples.PeakSamples)
					}
					if err == nil && resp.StatusCode/100 != 2 {
						err = fmt.Errorf("the replay got HTTP %d: %s", resp.StatusCode, clipText(string(body), 200))
					}
					mu.Lock()
					total += n
					mu.Unlock()
				}
			}
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}(r)
	}
	wg.Wait()
	return time.Since(start), total, stats, first
}

type promStats struct{ samples, peak int64 }

// RequestsEnv, when set, makes every replay print one line per request: its time alone, the
// bytes of its answer, the samples Prometheus read, its range and its PromQL (clipped): where a
// query's cost goes.
const RequestsEnv = "INFERSCOPE_BENCH_REQUESTS"

func printRequest(r recorded, took time.Duration, n, samples, peak int64) {
	_, v := r.params()
	span := ""
	if a, err1 := strconv.ParseFloat(v.Get("start"), 64); err1 == nil {
		if z, err2 := strconv.ParseFloat(v.Get("end"), 64); err2 == nil {
			span = fmt.Sprintf("%s at %ss", time.Duration((z-a)*float64(time.Second)), v.Get("step"))
		}
	}
	q := strings.Join(strings.Fields(v.Get("query")), " ")
	fmt.Printf("|   request | %9s | %10s | samples %11d, peak %10d | %-18s | %s\n", took.Round(time.Millisecond), prom.FormatBytes(n), samples, peak, span, clipText(q, 300))
}

// overviewTargets are every Prometheus-reading query of the overview dashboard with its
// variables at "All" (gpu_live reads the probes, not Prometheus: left out).
func overviewTargets(b *testing.B) []string {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "dashboards", "inferscope-overview.json"))
	if err != nil {
		b.Fatal(err)
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		b.Fatal(err)
	}
	var out []string
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, p := range ps {
			var panel struct {
				Panels  []json.RawMessage `json:"panels"`
				Targets []map[string]any  `json:"targets"`
			}
			_ = json.Unmarshal(p, &panel)
			walk(panel.Panels)
			for _, t := range panel.Targets {
				if t["queryType"] == "gpu_live" {
					continue
				}
				for k, v := range t {
					s, ok := v.(string)
					switch {
					case k == "refId" || k == "datasource":
						delete(t, k)
					case ok && k == "warmupFilter":
						t[k] = true
					case ok && strings.HasPrefix(s, "$"):
						delete(t, k) // "All": no filter
					case ok && k == "expr":
						t[k] = strings.NewReplacer("$model", ".*", "$version", ".*", "$instance", ".*").Replace(s)
					}
				}
				q, _ := json.Marshal(t)
				out = append(out, string(q))
			}
		}
	}
	walk(d.Panels)
	return out
}

type scaleRow struct {
	name      string
	wall, raw time.Duration
	derived   time.Duration // the same answer with the store's answers served at once
	misses    int           // requests of the canned run that were not recorded
	// CPU time: the engine's in the canned run, Prometheus' while it answered the replay. Unlike
	// wall times on a shared machine, they do not grow with the load.
	engineCPU, promCPU time.Duration
	// readCPU is what reading the same answers alone costs a client (readAlone): part of the
	// round trip, which the raw PromQL's reader pays too; the engine's derived work is the rest.
	readCPU     time.Duration
	trips       int
	bytes, rawB int64
	peak        uint64
	err         string
	notice      string
	stats       promStats
}

// BenchmarkScale measures, at each fleet scale (testbed.Scaled: 1× = 3 instances and 24 GPUs,
// 100× = 300 instances, 2,400 GPUs, 24 models), every query type, the overview dashboard's whole
// set of queries, triage, gate and a 7-day backtest: wall time, Prometheus round trips, bytes
// received and the engine's peak heap, each against the same PromQL replayed alone, and the
// engine's own work: the same answer again with every Prometheus answer served at once from
// memory ("derived", and its share of the raw round trip), and the CPU time it took against
// the CPU time Prometheus took to answer the replay. One run per scale; the table goes to
// stdout (docs/benchmarks.md).
//
//	INFERSCOPE_BENCH_SCALES=1,10,100 go test -run '^$' -bench BenchmarkScale -benchtime 1x -timeout 4h ./pkg/engine/
func BenchmarkScale(b *testing.B) {
	scales := []int{1}
	if v := os.Getenv(ScalesEnv); v != "" {
		scales = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("%s: %v", ScalesEnv, err)
			}
			scales = append(scales, n)
		}
	}
	for i := 0; i < b.N; i++ {
		for _, f := range scales {
			benchScale(b, f)
		}
	}
}

// scaledEngine starts Prometheus on the test bed scaled by factor and an engine reading it
// through a wire that records the answers; the engine's clock stands at the test bed's end.
func scaledEngine(b *testing.B, factor int) (*engine.Engine, *wire, *promtest.Server, []*testbed.Scenario) {
	dir, groups := tbtest.ScaledTSDB(b, factor)
	// Blocks no larger than 2h are made from here on: Prometheus leaves the history's day blocks
	// as they are instead of compacting them while the figures are taken.
	// The query timeout is raised so the raw PromQL sent alone finishes at 100× too (a benchmark
	// measures the cost; the 2-minute default is a limit of its own, docs/stores.md).
	srv := promtest.Start(b, promtest.Options{DataDir: dir, ExtraArgs: benchPromArgs()})
	w := &wire{dir: b.TempDir()}
	c, err := prom.New(srv.URL, &http.Client{Transport: w}, prom.MaxAnswerBytes(1<<30))
	if err != nil {
		b.Fatal(err)
	}
	end := testbed.DefaultEnd
	e, err := engine.New(context.Background(), engine.Config{Prom: c, WarmupWindow: 2 * time.Minute, Limits: benchLimits(b), Now: func() time.Time { return end }})
	if err != nil {
		b.Fatal(err)
	}
	return e, w, srv, groups
}

func benchScale(b *testing.B, factor int) {
	e, w, srv, groups := scaledEngine(b, factor)
	end := testbed.DefaultEnd
	s := groups[0]
	surge, _ := s.Incident(testbed.QueueSurge)
	canary, _ := s.Incident(testbed.CanarySlower)
	rng := engine.Range{Start: end.Add(-6 * time.Hour), End: end, MinStep: time.Minute}
	run := func(raw string) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			q, err := engine.Parse([]byte(raw))
			if err != nil {
				return "", err
			}
			res, err := e.Run(ctx, q, rng)
			if err != nil {
				return "", err
			}
			var n []string
			for _, x := range res.Notices {
				n = append(n, x.Text)
			}
			return strings.Join(n, "; "), nil
		}
	}
	type item struct {
		name string
		fn   func(context.Context) (string, error)
	}
	var items []item
	seen := map[string]bool{}
	targets := overviewTargets(b)
	for _, t := range targets { // one panel's query per type, the dashboard's own
		var q struct {
			QueryType string `json:"queryType"`
		}
		_ = json.Unmarshal([]byte(t), &q)
		if !seen[q.QueryType] {
			seen[q.QueryType] = true
			items = append(items, item{"type " + q.QueryType, run(t)})
		}
	}
	items = append(items,
		item{"baseline by instance (7 days, 6 h)", run(`{"queryType":"baseline","quantile":0.95,"days":7,"window":"10m","by":"instance"}`)},
		item{"overview dashboard (" + strconv.Itoa(len(targets)) + " queries)", func(ctx context.Context) (string, error) {
			var wg sync.WaitGroup
			errs := make([]error, len(targets))
			for i, t := range targets { // Grafana sends a dashboard's panels together
				wg.Add(1)
				go func() { defer wg.Done(); _, errs[i] = run(t)(ctx) }()
			}
			wg.Wait()
			return "", panelErrors(errs)
		}},
		item{"triage (queue surge)", func(ctx context.Context) (string, error) {
			_, err := triage.Diagnose(ctx, e, triage.Options{Model: surge.Model, Instance: surge.Instance,
				From: surge.Start.Add(5 * time.Minute), To: surge.Start.Add(20 * time.Minute)}.WithDefaults(end))
			return "", err
		}},
		item{"gate (canary)", func(ctx context.Context) (string, error) {
			_, err := gate.Evaluate(ctx, e, gate.Options{Model: canary.Model, Baseline: s.StableVersion(canary.Model), Canary: s.CanaryVersion(canary.Model), At: end}.WithDefaults(end))
			return "", err
		}},
		item{"backtest (7 days)", func(ctx context.Context) (string, error) { return backtestFailures(ctx, e, end, 7*24*time.Hour) }},
		// What a large fleet can backtest within the limits: one day.
		item{"backtest (1 day)", func(ctx context.Context) (string, error) { return backtestFailures(ctx, e, end, 24*time.Hour) }},
	)
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("\n%d× fleet: %d instances, %d GPUs, %d models; load average %s", factor, 3*factor, 24*factor, len(modelsOf(groups)), load)
	fmt.Printf("| %-40s | %9s | %9s | %5s | %9s | %7s | %9s | %9s | %7s | %9s | %12s | %6s | %9s | %9s | %9s | %13s | %11s | %s\n", "what", "wall", "raw alone", "ratio", "derived", "der/raw",
		"eng CPU", "prom CPU", "eng/prom", "read CPU", "derived/trip", "trips", "received", "raw recv", "peak heap", "samples read", "peak samples", "error / notice")
	skip := strings.Split(os.Getenv("INFERSCOPE_BENCH_SKIP"), ",") // items whose name contains one are left out
	limit := 20 * time.Minute
	if v, err := time.ParseDuration(os.Getenv("INFERSCOPE_BENCH_ITEM_TIMEOUT")); err == nil {
		limit = v
	}
	for _, it := range items {
		if slices.ContainsFunc(skip, func(s string) bool { return s != "" && strings.Contains(it.name, s) }) || !strings.Contains(it.name, os.Getenv("INFERSCOPE_BENCH_ONLY")) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		w.start()
		var notice string
		t0 := time.Now()
		peak, err := heapPeak(func() (err error) { notice, err = it.fn(ctx); return })
		wall := time.Since(t0)
		trips, got, par, reqs := w.stop()
		cancel()
		row := scaleRow{name: it.name, wall: wall, trips: trips, bytes: got, peak: peak}
		if err != nil {
			row.err = err.Error()
		}
		if strings.Contains(notice, engine.RecordedLatency) {
			row.notice = "recorded"
		} else {
			row.notice = notice
		}
		p0 := promCPU(srv.URL)
		if rw, rb, st, rerr := replay(reqs, par); rerr == nil {
			row.raw, row.rawB, row.stats = rw, rb, st
		} else {
			row.err = strings.TrimPrefix(row.err+"; replay: "+rerr.Error(), "; ")
		}
		row.promCPU = promCPU(srv.URL) - p0
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			// The replay's garbage (its bodies, their stats decoded) is the benchmark's, not the
			// engine's: collected before, so the engine's CPU holds only its own collections.
			// Each pass runs cannedRuns times back to back and its CPU is their mean, the
			// collections it causes included: one pass alone moves by half from run to run (the
			// first after a collection pays for the heap's spans again).
			n := cannedRuns()
			var served []recorded
			runtime.GC()
			c0 := selfCPU()
			for range n {
				wall, misses, reqs, _ := w.cannedRun(func() error { _, err := it.fn(ctx); return err })
				row.derived, row.misses, served = row.derived+wall/time.Duration(n), max(row.misses, misses), reqs
			}
			row.engineCPU = (selfCPU() - c0) / time.Duration(n)
			runtime.GC()
			c0 = selfCPU()
			for range n {
				if rerr := w.readAlone(served); rerr != nil {
					row.err = strings.TrimPrefix(row.err+"; read alone: "+rerr.Error(), "; ")
					break
				}
			}
			row.readCPU = (selfCPU() - c0) / time.Duration(n)
			cancel()
		}
		w.drop()
		printRow(row)
	}
	benchRecorded(b, factor, srv.URL)
}

// CannedRunsEnv sets how many times the canned run and the answers' read alone are repeated
// (default 7); each figure is the mean of its runs.
const CannedRunsEnv = "INFERSCOPE_BENCH_CANNED_RUNS"

func cannedRuns() int {
	if n, err := strconv.Atoi(os.Getenv(CannedRunsEnv)); err == nil && n > 0 {
		return n
	}
	return 7
}

// RecordedRangeEnv sets the range of the fast-path comparison (benchRecorded): a duration
// ending at the history's end (default 6h). The history holds 8 days, so 23h is the longest
// range with 7 whole previous days behind it (the baseline's ±10 min window and the rate window
// reach before the range's start); "off" leaves the comparison out.
const RecordedRangeEnv = "INFERSCOPE_BENCH_RECORDED_RANGE"

// PromArgsEnv adds command-line flags (space-separated) to every Prometheus the benchmark
// starts (e.g. "--query.max-samples=20000000"); the block durations and the 30-minute query
// timeout are set already.
const PromArgsEnv = "INFERSCOPE_BENCH_PROM_ARGS"

func benchPromArgs() []string {
	return append([]string{"--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h", "--query.timeout=30m"}, strings.Fields(os.Getenv(PromArgsEnv))...)
}

// benchRecorded backfills the rule file's latency recording over the previous days the
// per-instance baseline reads (promtool evaluates the rule against the raw history), starts a
// Prometheus with those blocks and the rule loaded, and times the baseline there against the
// raw path: the fast path's gain at this scale. The range is RecordedRangeEnv's (6 h by
// default) at a 1-minute step.
func benchRecorded(b *testing.B, factor int, rawURL string) {
	end := testbed.DefaultEnd
	span := 6 * time.Hour
	v := os.Getenv(RecordedRangeEnv)
	if v == "off" {
		return
	}
	if v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > 23*time.Hour {
			b.Fatalf("%s=%q: want a duration up to 23h (the history's 8 days less the 7 the baseline reads)", RecordedRangeEnv, v)
		}
		span = d
	}
	rng := engine.Range{Start: end.Add(-span), End: end, MinStep: time.Minute}
	work := b.TempDir()
	rules := recordedRuleFile(b, work)
	out := filepath.Join(work, "backfill")
	promtool := promtest.RequireBinary(b, "promtool")
	// The stretches the baseline reads: each previous day's [start − 30 min, end + 15 min], or
	// one stretch where they touch (ranges of about a day), and the range itself (its current
	// value is read from the recording too), up to the history's end.
	var stretches [][2]time.Time
	for d := 7; d >= 0; d-- {
		shift := time.Duration(d) * 24 * time.Hour
		a, z := rng.Start.Add(-shift-30*time.Minute), end.Add(-shift+15*time.Minute)
		if d == 0 {
			z = end.Add(time.Minute)
		}
		if n := len(stretches); n > 0 && !a.After(stretches[n-1][1]) {
			stretches[n-1][1] = z
			continue
		}
		stretches = append(stretches, [2]time.Time{a, z})
	}
	t0 := time.Now()
	var covered time.Duration
	for _, st := range stretches {
		cmd := exec.CommandContext(b.Context(), promtool, "tsdb", "create-blocks-from", "rules",
			"--start="+strconv.FormatInt(st[0].Unix(), 10), "--end="+strconv.FormatInt(st[1].Unix(), 10),
			"--url="+rawURL, "--eval-interval=60s", "--output-dir="+out, rules)
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("promtool backfill: %v\n%s", err, o)
		}
		covered += st[1].Sub(st[0])
	}
	backfill := time.Since(t0)
	dir, _ := tbtest.ScaledTSDB(b, factor)
	blocks, _ := filepath.Glob(filepath.Join(out, "*"))
	for _, blk := range blocks {
		if err := os.Rename(blk, filepath.Join(dir, filepath.Base(blk))); err != nil {
			b.Fatal(err)
		}
	}
	rec := promtest.Start(b, promtest.Options{DataDir: dir, ConfigYAML: "rule_files: [" + strconv.Quote(rules) + "]\n", ExtraArgs: benchPromArgs()})
	q, err := engine.Parse([]byte(`{"queryType":"baseline","quantile":0.95,"days":7,"window":"10m","by":"instance"}`))
	if err != nil {
		b.Fatal(err)
	}
	what := fmt.Sprintf("baseline by instance, 7 days back, %s", promDuration(span))
	fmt.Printf("| %-40s | backfill of %d stretch(es), %s in all, took %s\n", what, len(stretches), covered, backfill.Round(time.Second))
	// The raw path first (its history was just read by the backfill), then the recorded one run
	// once untimed: its recording check is cached, as on a running data source.
	raw := timedBaseline(b, rawURL, q, rng, 1)
	recorded := timedBaseline(b, rec.URL, q, rng, 2)
	for _, r := range []struct {
		path string
		m    baselineRun
	}{{"raw", raw}, {"recorded", recorded}} {
		fmt.Printf("| %-40s | %-8s | %9s | replayed alone %9s | %d round trips | %9s received | samples read %d, peak %d | %s\n", what, r.path,
			r.m.wall.Round(time.Millisecond), r.m.replay.Round(time.Millisecond), r.m.trips, prom.FormatBytes(r.m.bytes), r.m.stats.samples, r.m.stats.peak, clipText(r.m.outcome, 400))
	}
	fmt.Printf("| %-40s | recorded %.1f× faster (replayed alone %.1f×), %.1f× fewer samples read\n", what,
		raw.wall.Seconds()/recorded.wall.Seconds(), raw.replay.Seconds()/max(recorded.replay.Seconds(), 1e-9), float64(raw.stats.samples)/float64(max(recorded.stats.samples, 1)))
}

// baselineRun is one timed run of the per-instance baseline and what it made Prometheus do.
type baselineRun struct {
	wall, replay time.Duration
	trips        int
	bytes        int64
	stats        promStats
	outcome      string // the error, or which notices matter: recorded, split
}

// timedBaseline runs q on the store at url `runs` times (an engine of its own) and returns the
// last run, with its requests replayed alone with stats=all: the samples Prometheus read.
func timedBaseline(b *testing.B, url string, q engine.Query, rng engine.Range, runs int) baselineRun {
	w := &wire{}
	c, err := prom.New(url, &http.Client{Transport: w}, prom.MaxAnswerBytes(4<<30))
	if err != nil {
		b.Fatal(err)
	}
	end := rng.End
	e, err := engine.New(context.Background(), engine.Config{Prom: c, WarmupWindow: 2 * time.Minute, Limits: benchLimits(b), Now: func() time.Time { return end }})
	if err != nil {
		b.Fatal(err)
	}
	var r baselineRun
	for i := 0; i < runs; i++ {
		w.start()
		t0 := time.Now()
		res, err := e.Run(context.Background(), q, rng)
		r.wall = time.Since(t0)
		var reqs []recorded
		r.trips, r.bytes, _, reqs = w.stop()
		if i < runs-1 {
			continue
		}
		var notes []string
		if err != nil {
			notes = append(notes, "error: "+err.Error())
		} else {
			for _, n := range res.Notices {
				switch {
				case strings.Contains(n.Text, engine.RecordedLatency):
					notes = append(notes, "recorded")
				case strings.Contains(n.Text, "split into"):
					notes = append(notes, n.Text)
				}
			}
		}
		var rerr error
		r.replay, _, r.stats, rerr = replay(reqs, 1)
		if rerr != nil {
			notes = append(notes, "replay: "+rerr.Error())
		}
		r.outcome = strings.Join(notes, "; ")
	}
	return r
}

func promDuration(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
}

// panelErrors says how many of a dashboard's panels failed, and each distinct reason once.
func panelErrors(errs []error) error {
	var msgs []string
	n := 0
	for _, err := range errs {
		if err != nil {
			n++
			if !slices.Contains(msgs, err.Error()) {
				msgs = append(msgs, err.Error())
			}
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d panels failed: %s", n, len(errs), strings.Join(msgs, " | "))
}

func modelsOf(groups []*testbed.Scenario) []string {
	var out []string
	for _, g := range groups {
		for _, m := range g.Models() {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

func printRow(r scaleRow) {
	ratio := "-"
	if r.raw > 0 {
		ratio = fmt.Sprintf("%.2f", r.wall.Seconds()/r.raw.Seconds())
	}
	derived, share, cpuShare, derivedShare := "-", "-", "-", "-"
	if r.derived > 0 {
		derived = r.derived.Round(time.Millisecond).String()
		if r.raw > 0 {
			share = fmt.Sprintf("%.1f %%", 100*r.derived.Seconds()/r.raw.Seconds())
		}
		if r.promCPU > 0 {
			cpuShare = fmt.Sprintf("%.1f %%", 100*r.engineCPU.Seconds()/r.promCPU.Seconds())
			// The derived work (the engine's CPU less reading the answers) against the round
			// trip's CPU (Prometheus answering, the client reading).
			derivedShare = fmt.Sprintf("%.1f %%", 100*(r.engineCPU-r.readCPU).Seconds()/(r.promCPU+r.readCPU).Seconds())
		}
	}
	msg := strings.TrimPrefix(r.err+"; "+r.notice, "; ")
	if r.misses > 0 {
		msg += fmt.Sprintf("; the canned run sent %d requests that were not recorded", r.misses)
	}
	msg = strings.TrimSuffix(msg, "; ")
	fmt.Printf("| %-40s | %9s | %9s | %5s | %9s | %7s | %9s | %9s | %7s | %9s | %12s | %6d | %9s | %9s | %9s | %13d | %11d | %s\n", r.name, r.wall.Round(time.Millisecond), r.raw.Round(time.Millisecond),
		ratio, derived, share, r.engineCPU.Round(time.Millisecond), r.promCPU.Round(time.Millisecond), cpuShare, r.readCPU.Round(time.Millisecond), derivedShare, r.trips, prom.FormatBytes(r.bytes), prom.FormatBytes(r.rawB), prom.FormatBytes(int64(r.peak)), r.stats.samples, r.stats.peak, clipText(msg, 600))
}

// promCPU is the CPU time the Prometheus at url has used (its own process_cpu_seconds_total,
// 10 ms resolution); 0 when it cannot be read.
func promCPU(url string) time.Duration {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "process_cpu_seconds_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return time.Duration(f * float64(time.Second))
			}
		}
	}
	return 0
}

// selfCPU is the CPU time this process has used, user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// backtestFailures runs the catalog's backtest over the span ending at end and names each rule
// that failed alone (a rule refused at a limit fails in the report, not the run).
func backtestFailures(ctx context.Context, e *engine.Engine, end time.Time, span time.Duration) (string, error) {
	p := alerting.Defaults()
	p.FollowEngine(e)
	rep, err := backtest.Run(ctx, e, backtest.Options{Params: p, From: end.Add(-span), To: end}, nil)
	if err != nil {
		return "", err
	}
	var failed []string
	for _, r := range rep.Rules {
		if r.Error != "" {
			failed = append(failed, r.ID+": "+r.Error)
		}
	}
	return strings.Join(failed, "; "), nil
}
