package engine

import (
	"math"
	"sync"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
)

// HistoryCache keeps the previous days' latency read by baseline queries between queries. The
// past does not change, so a refreshed panel or an alert rule evaluated every minute reads only
// the minutes it has not read yet: the history query shrinks from the whole ±window stretch of
// every day to the few new minutes. It is bounded in samples (least recently used entries go
// first) and safe for concurrent use; the zero value is not usable, use NewHistoryCache.
type HistoryCache struct {
	mu         sync.Mutex
	maxSamples int
	samples    int
	clock      int64 // use counter for eviction
	entries    map[string]*historyEntry
	hits       int64 // queries answered (partly) from the cache
}

// historyEntry is the answer of one history expression on a grid [from, to] at step.
type historyEntry struct {
	from, to, step int64
	series         []derive.Series // on the grid, NaN where absent
	used           int64
}

func (e *historyEntry) size() int { return len(e.series) * int((e.to-e.from)/e.step+1) }

// DefaultHistorySamples bounds a data source's history cache (16 bytes a sample with its share of
// timestamps: about 32 MB).
const DefaultHistorySamples = 2_000_000

// NewHistoryCache returns a cache holding at most maxSamples samples (0 = DefaultHistorySamples).
func NewHistoryCache(maxSamples int) *HistoryCache {
	if maxSamples <= 0 {
		maxSamples = DefaultHistorySamples
	}
	return &HistoryCache{maxSamples: maxSamples, entries: map[string]*historyEntry{}}
}

// Hits is how many history reads the cache has served, wholly or in part.
func (c *HistoryCache) Hits() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

// missing returns the part of [from, to] the cache cannot serve for key: the whole span, the
// span after what is cached (a range that moved forward), or nothing.
func (c *HistoryCache) missing(key string, from, to, step int64) (int64, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.step != step || from < e.from || from > e.to+step {
		return from, to, true
	}
	if to <= e.to {
		return 0, 0, false
	}
	return e.to + step, to, true
}

// merge adds what was fetched over [a, b] to the entry of key, keeps [from, to] and returns that
// stretch's series on grid. Samples at or after stable are returned but not kept: they may
// still change. It reports false when the entry changed since missing was asked and the fetch
// does not cover [from, to] without it (a concurrent query): the caller then reads it all.
func (c *HistoryCache) merge(key string, fetched []derive.Series, a, from, to, step, stable int64, grid []int64) ([]derive.Series, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	old, ok := c.entries[key]
	if ok && (old.step != step || from < old.from || a > old.to+step) {
		ok = false
	}
	if !ok && a > from {
		return nil, false
	}
	if ok && a > from {
		c.hits++
	}
	// Collect every series' values on the requested grid, from the cache and the fetch.
	byLabels := map[string][]float64{}
	labels := map[string]map[string]string{}
	var order []string
	put := func(s derive.Series) {
		k := labelsText(s.Labels)
		v, seen := byLabels[k]
		if !seen {
			v = nanValues(len(grid))
			byLabels[k] = v
			labels[k] = s.Labels
			order = append(order, k)
		}
		for i, t := range s.T {
			if j := int((t - from) / step); t >= from && t <= to && (t-from)%step == 0 && !math.IsNaN(s.V[i]) {
				v[j] = s.V[i]
			}
		}
	}
	if ok {
		for _, s := range old.series {
			put(s)
		}
	}
	for _, s := range fetched {
		put(s)
	}
	out := make([]derive.Series, len(order))
	for i, k := range order {
		out[i] = derive.Series{Labels: labels[k], T: grid, V: byLabels[k]}
	}
	// Keep the stable part only.
	keepTo := min(to, floorTo(stable-1, step))
	if ok {
		c.samples -= old.size()
		delete(c.entries, key)
	}
	if keepTo >= from {
		n := int((keepTo-from)/step) + 1
		kept := make([]derive.Series, len(out))
		for i, s := range out {
			kept[i] = derive.Series{Labels: s.Labels, T: grid[:n], V: s.V[:n:n]}
		}
		e := &historyEntry{from: from, to: keepTo, step: step, series: kept, used: c.clock}
		if e.size() <= c.maxSamples {
			c.entries[key] = e
			c.samples += e.size()
		}
	}
	for c.samples > c.maxSamples {
		var lru string
		for k, e := range c.entries {
			if lru == "" || e.used < c.entries[lru].used {
				lru = k
			}
		}
		c.samples -= c.entries[lru].size()
		delete(c.entries, lru)
	}
	return out, true
}

// historyStable is how old a sample must be before the cache keeps it: older samples no longer
// change (late scrapes and rule evaluations have landed).
const historyStable = time.Hour
