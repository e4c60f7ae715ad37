package corpus

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
)

// BenchmarkCorpus replays the whole corpus: every server's fleet in a real Prometheus, the
// catalog's backtest over its case days, one triage per case, and prints the per-kind table
// (docs/benchmarks.md, "The incident corpus"). INFERSCOPE_CORPUS_SEED picks the seed (default
// 1), INFERSCOPE_CORPUS_SERVERS a comma-separated subset of servers, INFERSCOPE_CORPUS_STEP the
// spacing of the history's samples (default 1m; 15s is the brief's scrape interval, and the
// fleets' histories are then about four times as long to build), INFERSCOPE_CORPUS_RATE_WINDOW
// the rules' rate window (the rendering's --rate-window; default the catalog's),
// INFERSCOPE_CORPUS_CASES a comma-separated list of case ids to replay alone, each triage's whole
// report printed as JSON after its line. Run it once:
//
//	go test -run '^$' -bench Corpus -benchtime 1x -timeout 3h ./pkg/corpus/
func BenchmarkCorpus(b *testing.B) {
	seed := int64(1)
	if v := os.Getenv("INFERSCOPE_CORPUS_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("INFERSCOPE_CORPUS_SEED: %v", err)
		}
		seed = n
	}
	servers := testbed.CorpusServers
	if v := os.Getenv("INFERSCOPE_CORPUS_SERVERS"); v != "" {
		servers = strings.Split(v, ",")
	}
	step, rateWindow := envDuration(b, "INFERSCOPE_CORPUS_STEP"), envDuration(b, "INFERSCOPE_CORPUS_RATE_WINDOW")
	cases, err := testbed.GenerateCorpus(testbed.CorpusOptions{Seed: seed, Servers: servers})
	if err != nil {
		b.Fatal(err)
	}
	only := caseFilter(os.Getenv("INFERSCOPE_CORPUS_CASES"))
	if only != nil {
		servers = slices.DeleteFunc(slices.Clone(servers), func(server string) bool {
			return !slices.ContainsFunc(casesOf(cases, server), only)
		})
	}
	for i := 0; i < b.N; i++ {
		began := time.Now()
		// Fleets replay concurrently (corpusParallel at a time), each printing its cases when done.
		var mu sync.Mutex
		outs := map[string][]Outcome{}
		sem := make(chan struct{}, corpusParallel)
		var wg sync.WaitGroup
		for _, server := range servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				o, err := replayFleet(b, server, casesOf(cases, server), only, step, rateWindow, began)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					b.Errorf("%s: %v", server, err)
					return
				}
				outs[server] = o
				WriteCases(os.Stdout, o)
				if only != nil {
					writeReports(b, o)
				}
				WriteTable(os.Stdout, Summarize(o))
				fmt.Println()
			}()
		}
		wg.Wait()
		var all []Outcome
		for _, server := range servers {
			all = append(all, outs[server]...)
		}
		fmt.Printf("\ncorpus seed %d, %d cases, history step %s, %s\n\n", seed, len(all), cmp.Or(step, testbed.DefaultHistoryStep), time.Since(began).Round(time.Second))
		rows := Summarize(all)
		WriteTable(os.Stdout, rows)
		total := rows[len(rows)-1]
		b.ReportMetric(100*float64(total.Top1)/float64(total.Cases), "top1-%")
		b.ReportMetric(100*float64(total.Wrong)/float64(total.Cases), "wrong-%")
	}
}

// envDuration reads a duration from the environment (0 where unset).
func envDuration(b *testing.B, name string) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return d
}

// corpusParallel is how many fleets the benchmark replays at once.
const corpusParallel = 3

// caseFilter keeps the listed case ids (nil: every case).
func caseFilter(list string) func(testbed.Case) bool {
	if list == "" {
		return nil
	}
	ids := strings.Split(list, ",")
	return func(c testbed.Case) bool { return slices.Contains(ids, c.ID) }
}

// writeReports prints each case's triage report, indented JSON.
func writeReports(b *testing.B, outs []Outcome) {
	for _, o := range outs {
		js, err := json.MarshalIndent(o.Report, "", "  ")
		if err != nil {
			b.Fatal(err)
		}
		fmt.Printf("%s report:\n%s\n", o.Case.ID, js)
	}
}

// replayFleet serves a server's fleet (the history holds all its cases) and replays the cases
// only keeps (nil: all).
func replayFleet(b *testing.B, server string, cases []testbed.Case, only func(testbed.Case) bool, step, rateWindow time.Duration, began time.Time) ([]Outcome, error) {
	start := time.Now()
	e, s, build := startFleet(b, server, cases, step)
	fmt.Fprintf(os.Stderr, "corpus: %s fleet ready in %s (history built: %v, %.0f s)\n", server, time.Since(start).Round(time.Second), !build.Cached, build.Seconds)
	last := time.Time{}
	o, bt, err := Replay(b.Context(), e, s, ReplayOptions{Only: only, RateWindow: rateWindow, Progress: func(done, total int, what string) {
		if time.Since(last) > 20*time.Second || done == total {
			last = time.Now()
			fmt.Fprintf(os.Stderr, "corpus: %s %d/%d %s (%s)\n", server, done, total, what, time.Since(began).Round(time.Second))
		}
	}})
	if err != nil {
		return nil, err
	}
	fmt.Printf("corpus: %s: %d cases, history %v %.0f s, backtest %d queries in %.0f s, replay %s\n", server, len(o), !build.Cached, build.Seconds, bt.Queries, bt.Seconds, time.Since(start).Round(time.Second))
	return o, nil
}
