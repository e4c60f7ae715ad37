package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/inferscope/inferscope/pkg/prom"
)

// A range read the store refuses for its limit on samples (Prometheus' --query.max-samples,
// VictoriaMetrics' -search.maxSamplesPerQuery) is read again in two halves in time, and each
// half refused again in two halves, down to minSplitPoints steps. Prometheus evaluates every
// step of a range query on its own, so the halves' points are the unsplit read's, value for
// value; only the round trips grow.

// minSplitPoints is the fewest steps a part of a split read keeps: a part under twice that is
// not split again, and its refusal (naming the store's limit) is the read's error.
const minSplitPoints = 4

// splitConcurrency bounds the parts of a split read in flight at once (at least the read's
// own chunks, which go at once as before any split).
const splitConcurrency = 4

// span is a stretch [from, to] of a read's grid, in Unix milliseconds.
type span struct{ from, to int64 }

// halves cuts s at a step boundary into two spans of at least minSplitPoints steps each; ok is
// false when s is too short for that.
func (s span) halves(step int64) (a, b span, ok bool) {
	n := (s.to-s.from)/step + 1
	if n < 2*minSplitPoints {
		return span{}, span{}, false
	}
	mid := s.from + (n/2-1)*step
	return span{s.from, mid}, span{mid + step, s.to}, true
}

// rangeParts runs q over each chunk and returns the answers. A chunk the store refuses for a
// sample limit is split in time (level by level, at most max(len(chunks), splitConcurrency)
// parts in flight) until every part is answered or one is too short to split; the answers
// come back in time order.
func (x *Exec) rangeParts(ctx context.Context, q prom.RangeQuery, chunks []span) ([]prom.Result, error) {
	type answer struct {
		s   span
		res prom.Result
	}
	step := q.Step.Milliseconds()
	var done []answer
	var limit prom.StoreLimit      // the limit the store named when it refused a part
	pending, inFlight := chunks, 0 // 0: the chunks all at once, as an unsplit read
	for len(pending) > 0 {
		res := make([]prom.Result, len(pending))
		refused := make([]prom.StoreLimit, len(pending))
		err := Parallel(ctx, len(pending), inFlight, func(ctx context.Context, i int) error {
			pq := q
			pq.Start, pq.End = time.UnixMilli(pending[i].from), time.UnixMilli(pending[i].to)
			r, err := x.e.Prom.QueryRange(ctx, pq)
			if err != nil {
				if _, _, ok := pending[i].halves(step); ok && prom.StoreLimitOf(err).InTime() {
					refused[i] = prom.StoreLimitOf(err)
					return nil
				}
				return err
			}
			res[i] = r
			return nil
		})
		if err != nil {
			return nil, err
		}
		var next []span
		for i, s := range pending {
			if refused[i] != 0 {
				limit = refused[i]
				a, b, _ := s.halves(step)
				next = append(next, a, b)
				continue
			}
			done = append(done, answer{s, res[i]})
		}
		pending, inFlight = next, max(len(chunks), splitConcurrency)
	}
	slices.SortFunc(done, func(a, b answer) int { return cmp.Compare(a.s.from, b.s.from) })
	if limit != 0 {
		x.splitNotice(limit, len(done))
	}
	out := make([]prom.Result, len(done))
	for i, a := range done {
		out[i] = a.res
	}
	return out, nil
}

// splits counts the reads of one query split for a store limit, for its one notice.
type splits struct {
	index        int // of the notice in the result
	reads, parts int
}

// splitNotice records that a read was answered in parts because of the store's limit: the
// query's one notice says how many reads and parts.
func (x *Exec) splitNotice(limit prom.StoreLimit, parts int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	sp := x.splits
	if sp == nil {
		sp = &splits{index: len(x.res.Notices)}
		x.splits = sp
		x.res.Notices = append(x.res.Notices, Notice{Severity: Info})
	}
	sp.reads++
	sp.parts += parts
	what, it := "a read was", "it"
	if sp.reads > 1 {
		what, it = fmt.Sprintf("%d reads were", sp.reads), "them"
	}
	x.res.Notices[sp.index].Text = fmt.Sprintf("%s split into %d parts in time because the store refused %s whole at %s; the parts' answers are merged into the same values, at the cost of more round trips (docs/stores.md)",
		what, sp.parts, it, limit)
}
