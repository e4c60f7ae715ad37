// Package engine computes Inferscope's derived series (latency quantiles, the queue/compute/network
// split, the jitter ratio, the same-time-of-day baseline, throughput, error ratios and the GPU
// views) from a Prometheus, for any metric profile. It is plain Go: no Grafana types. The data
// source turns its results into frames; the command line and the tests use it directly.
//
// # Shape of a query
//
//	q, err := engine.Parse(rawJSON)          // the public query JSON (docs/queries.md)
//	e, err := engine.New(ctx, engine.Config{Prom: client, Profile: "auto", WarmupWindow: 2*time.Minute})
//	res, err := e.Run(ctx, q, engine.Range{Start: from, End: to, MinStep: interval})
//
// Go callers build queries with the typed front instead of JSON, e.g.
// engine.Latency{Select: engine.Select{Model: []string{"recsys"}}, Quantiles: []float64{0.99}}.Query().
//
// New (config.go) is the one way to build an engine, for the data source, the command line and
// the tests: it reads the metric names and finds the server (profile) of each model, both cached
// by a Catalog. Run groups the query's models by server, runs the type's Runner once per server
// with an Exec bound to that server's profile, and merges the answers (fleet.go): one server's
// answer is exactly what an engine of that server alone returns; several servers' series carry
// ServerLabel and their notices name their server.
//
// Parse reads the fields every type shares (Common) and hands the rest to the type's own parser
// (Fields has readers with clear errors), which returns a Runner. Every type is stated once in
// the registry (spec.go): a TypeSpec with its fields' kinds, defaults and bounds, which the
// parsers read through, the data source dispatches by, and `go generate ./pkg/engine/specgen`
// turns into the frontend's list and the docs' field tables. Adding a query type is one file: a
// TypeSpec with its parse function (listed in the registry), a typed front (front.go), and a
// Runner whose Run uses the Exec to read Prometheus and to add series and notices. The PromQL
// passthrough (`promql`) is a type like the others, so the engine stays the one door to
// Prometheus.
//
// # Pipeline of a model query
//
// Series are read per profile role (profile.Resolve picks the first measure whose metrics exist):
// histograms as summed bucket rates, µs counters as rate(duration)/rate(count), summaries as their
// quantile series. All parts of a query go to Prometheus as one expression (a union told apart
// by a label), so a query costs one round trip, plus one small one for the warm-up signals and,
// for baseline, one for the previous days (run alongside).
//
// With the warm-up filter on (the default), the lifecycle events of the selected instances are
// read first (sparse: not-ready points, recent process starts, counter resets, appearances) and
// turned into derive.WarmupMask masks, widened by the rate window (a rate at t still holds the
// observations of [t − window, t]). Instances that warm up in the range are then fetched on
// their own, their warming samples dropped, and added to the sum Prometheus makes of the steady
// ones; without warming instances Prometheus also takes the histogram quantiles, and a filtered
// query sends what an unfiltered one does.
//
// Baseline queries read the previous days at a one-minute resolution; a HistoryCache on the
// Engine keeps them across queries, since the past does not change.
//
// # Limits
//
// Range length, points per series, series fetched (as samples) and series returned are bounded
// (Limits); exceeding one is a clear error before memory is spent. A range read is chunked at
// Prometheus' 11,000 points; a chunk the store refuses for its own sample limit (--query.max-samples,
// -search.maxSamplesPerQuery) is read again in halves in time and merged, with one notice
// (fetch_split.go).
package engine
