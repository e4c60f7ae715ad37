package engine

import (
	"context"
	"sync"
)

// Parallel runs fn(0..n-1) with at most limit calls at once (limit <= 0: all at once) and
// returns the first error; the calls still running are cancelled and those not started yet
// are skipped. The answers built on the engine (triage) bound their reads with it, so that one
// question does not crowd out the dashboards.
func Parallel(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	switch {
	case n <= 0:
		return nil
	case n == 1:
		return fn(ctx, 0)
	}
	if limit <= 0 || limit > n {
		limit = n
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	fail := func(err error) {
		once.Do(func() {
			first = err
			cancel()
		})
	}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				fail(ctx.Err())
				return
			}
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	return first
}

// parallel runs fn(0..n-1) all at once and returns the first error; the others are cancelled.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	return Parallel(ctx, n, 0, fn)
}
