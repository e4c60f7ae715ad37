// Package scaledb writes the history of a scaled test-bed fleet (testbed.Scaled) as Prometheus
// TSDB blocks, directly with Prometheus' TSDB library. It is its own package so that the
// binaries linking pkg/testbed (loadgen, probe) do not link the TSDB.
package scaledb

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/inferscope/inferscope/pkg/testbed"
)

// version changes when the scaled history's construction changes; it invalidates the cached
// scaled TSDBs (the base's own key covers the scenario and its namings).
const version = "scaled-v3"

// Private is testbed.PrivateTSDB for a fleet factor times Default's (testbed.Scaled), in the
// default variant's namings (custom inference series, the probe's GPU series, hosts) with its
// history: 8 days at the default step, GPU series the last 2. Factor 1 is the default variant's
// own blocks. It returns the groups' scenarios, group 0 being testbed.Default(DefaultEnd).
func Private(ctx context.Context, factor int, promtool, parent string) (dir string, groups []*testbed.Scenario, err error) {
	cached, groups, err := Cached(ctx, factor, promtool)
	if err != nil {
		return "", nil, err
	}
	dir = filepath.Join(parent, "tsdb")
	if err := testbed.LinkTree(cached, dir); err != nil {
		return "", nil, fmt.Errorf("copy the cached TSDB: %w", err)
	}
	return dir, groups, nil
}

// Cached returns the cached blocks of a scaled fleet, building them when missing.
//
// Every group's history is Default's with its label values renamed (testbed.Relabel): the
// groups share the truth model and the incident times, so their samples are equal and only the
// names differ. The blocks are therefore written directly from the default variant's cached
// blocks, group by group, instead of generating and importing OpenMetrics a hundred times: at
// 100× that path costs about 100 × the default's 14-20 s of CPU (25-35 min on 2 cores), where
// the copy costs minutes (docs/benchmarks.md).
func Cached(ctx context.Context, factor int, promtool string) (string, []*testbed.Scenario, error) {
	groups, err := testbed.Scaled(testbed.DefaultEnd, factor)
	if err != nil {
		return "", nil, err
	}
	bases, err := testbed.WarmTSDBCache(ctx, promtool, testbed.TSDBOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("build the test bed TSDB: %w", err)
	}
	base := bases[0]
	if factor == 1 {
		return base, groups, nil
	}
	key := fmt.Sprintf("%s-%dx-%s", version, factor, filepath.Base(base))
	dir, err := testbed.CachedDir(ctx, key, func(ctx context.Context, dir string) error {
		if err := WriteScaledTSDB(ctx, base, dir, groups); err != nil {
			return fmt.Errorf("write the %d× fleet's TSDB: %w", factor, err)
		}
		return nil
	})
	return dir, groups, err
}

// WriteScaledTSDB writes into dir (created) the series of the Default history in base renamed
// for every group (testbed.Relabel against groups[0]): one block per day of history, so that
// the writer holds a few days of the fleet in memory at a time, not eight.
func WriteScaledTSDB(ctx context.Context, base, dir string, groups []*testbed.Scenario) error {
	logger := slog.New(slog.DiscardHandler)
	blocks, closeBlocks, err := openBlocks(base, logger)
	if err != nil {
		return err
	}
	defer closeBlocks()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	relabels := make([]testbed.GroupRelabel, len(groups))
	for g := range groups {
		relabels[g] = testbed.Relabel(groups[0], groups[g])
	}
	mint, maxt := int64(math.MaxInt64), int64(math.MinInt64)
	for _, b := range blocks {
		mint, maxt = min(mint, b.Meta().MinTime), max(maxt, b.Meta().MaxTime)
	}
	// The windows are written side by side, as many at once as there are CPUs, at most 2: each
	// holds a day of the whole fleet in memory, about 4.5 GiB at 100× (the 100× build peaked at
	// 9 GiB resident with two; docs/benchmarks.md).
	window := int64(24 * time.Hour / time.Millisecond)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, max(1, min(runtime.NumCPU(), 2)))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for a := mint; a < maxt; a += window {
		wg.Add(1)
		sem <- struct{}{}
		go func(a int64) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := writeWindow(ctx, blocks, a, min(a+window, maxt), dir, relabels, logger); err != nil {
				mu.Lock()
				if first == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
		}(a)
	}
	wg.Wait()
	return first
}

// writeWindow writes the samples in [a, b) of every group as one block.
func writeWindow(ctx context.Context, blocks []*tsdb.Block, a, b int64, dir string, relabels []testbed.GroupRelabel, logger *slog.Logger) error {
	var queriers []storage.Querier
	for _, blk := range blocks {
		q, err := tsdb.NewBlockQuerier(blk, a, b-1)
		if err != nil {
			return err
		}
		queriers = append(queriers, q)
	}
	q := storage.NewMergeQuerier(queriers, nil, storage.ChainedSeriesMerge)
	defer q.Close()
	// The head accepts samples no older than half its range behind the newest.
	w, err := tsdb.NewBlockWriter(logger, dir, 3*(b-a))
	if err != nil {
		return err
	}
	defer w.Close()
	set := q.Select(ctx, false, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	app := w.Appender(ctx)
	var (
		it      chunkenc.Iterator
		ts      []int64
		vs      []float64
		pending int
	)
	for set.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := set.At()
		ts, vs = ts[:0], vs[:0]
		it = s.Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			if t, v := it.At(); t >= a && t < b {
				ts, vs = append(ts, t), append(vs, v)
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
		if len(ts) == 0 {
			continue
		}
		for _, r := range relabels {
			lb := labels.NewBuilder(s.Labels())
			s.Labels().Range(func(l labels.Label) {
				if l.Name != labels.MetricName && l.Name != "job" {
					lb.Set(l.Name, r.Value(l.Value))
				}
			})
			ls := lb.Labels()
			var ref storage.SeriesRef
			for i := range ts {
				if ref, err = app.Append(ref, ls, ts[i], vs[i]); err != nil {
					return fmt.Errorf("append %s: %w", ls, err)
				}
			}
			if pending += len(ts); pending > 2_000_000 {
				if err := app.Commit(); err != nil {
					return err
				}
				app, pending = w.Appender(ctx), 0
			}
		}
	}
	if err := set.Err(); err != nil {
		return err
	}
	if err := app.Commit(); err != nil {
		return err
	}
	_, err = w.Flush(ctx)
	return err
}

// openBlocks opens every block under dir (the promtool-made history has no WAL).
func openBlocks(dir string, logger *slog.Logger) ([]*tsdb.Block, func(), error) {
	metas, err := filepath.Glob(filepath.Join(dir, "*", "meta.json"))
	if err != nil || len(metas) == 0 {
		return nil, nil, fmt.Errorf("no TSDB blocks in %s", dir)
	}
	var blocks []*tsdb.Block
	closeAll := func() {
		for _, b := range blocks {
			b.Close()
		}
	}
	for _, m := range metas {
		b, err := tsdb.OpenBlock(logger, filepath.Dir(m), nil, nil)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		blocks = append(blocks, b)
	}
	return blocks, closeAll, nil
}
