package corpus

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
)

// BenchmarkCorpus replays the whole corpus: every server's fleet in a real Prometheus, the
// catalog's backtest over its case days, one triage per case, and prints the per-kind table
// (docs/benchmarks.md, "The incident corpus"). INFERSCOPE_CORPUS_SEED picks the seed (default
// 1), INFERSCOPE_CORPUS_SERVERS a comma-separated subset of servers. Run it once:
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
	cases, err := testbed.GenerateCorpus(testbed.CorpusOptions{Seed: seed, Servers: servers})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		began := time.Now()
		var outs []Outcome
		for _, server := range servers {
			start := time.Now()
			e, s, build := startFleet(b, server, casesOf(cases, server))
			fmt.Fprintf(os.Stderr, "corpus: %s fleet ready in %s (history built: %v, %.0f s)\n", server, time.Since(start).Round(time.Second), !build.Cached, build.Seconds)
			o, bt, err := Replay(b.Context(), e, s, func(done, total int, what string) {
				fmt.Fprintf(os.Stderr, "\rcorpus: %s %d/%d %-40s %s ", server, done, total, what, time.Since(began).Round(time.Second))
			})
			fmt.Fprintln(os.Stderr)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Printf("corpus: %s: %d cases, backtest %d queries in %.0f s, replay %s\n", server, len(o), bt.Queries, bt.Seconds, time.Since(start).Round(time.Second))
			outs = append(outs, o...)
		}
		fmt.Printf("\ncorpus seed %d, %d cases, %s\n\n", seed, len(outs), time.Since(began).Round(time.Second))
		WriteCases(os.Stdout, outs)
		fmt.Println()
		rows := Summarize(outs)
		WriteTable(os.Stdout, rows)
		all := rows[len(rows)-1]
		b.ReportMetric(100*float64(all.Top1)/float64(all.Cases), "top1-%")
		b.ReportMetric(100*float64(all.Wrong)/float64(all.Cases), "wrong-%")
	}
}
