// Package testbed is the known-truth inference fleet behind inferscope-loadgen, the tests and the
// probe's mock mode: one deterministic scenario whose every value is a pure function of time.
//
// # Clock
//
// Default(end) anchors the scenario at end (truncated to the second): the history spans
// end-8d .. end and every incident sits in the last day, so the 7 previous days are clean
// baselines (the incidents' same-time-of-day windows on those days are incident-free). TSDB uses
// the fixed DefaultEnd (2026-11-23T12:00:00Z); inferscope-loadgen --end=now anchors at its start,
// and serving after end simply continues the clock (the canary stays deployed).
//
// # Fleet
//
// Instances node-a:8000, node-b:8000, node-c:8000, each with 8 GPUs (ids 0-7): recsys-ranker
// runs on GPUs 0-3, text-embedder on GPUs 4-7 of every instance (ModelGPUs).
//
//	model          stable   canary (on node-c)                        mean QPS/instance
//	recsys-ranker  v1.4.0   v1.5.0: 25 % of node-c's traffic from      120
//	                        end-4h on, queue and compute x1.15
//	text-embedder  v2.1.0   v2.2.0: 20 % of node-c's traffic all        60
//	                        along, 2 % faster (a release that passes)
//
// Traffic: QPS = base × (1 + 0.5 cos(2π(t − peak)/1d)) × (1 + 0.06 sin(2πt/7d + φ)); peaks at
// 16:00 (recsys) and 15:00 (embedder) UTC, peak/trough = 3. The weekly ripple sums to zero over
// any 7 consecutive days at the same time of day, so a 7-day baseline mean of QPS equals the
// daily curve exactly while single days differ by a few percent (non-zero standard deviation).
//
// # Latency
//
// Each request has a queue time Q and a compute time C (lognormal mixtures) and crosses a
// network segment N (discrete); the service's e2e latency is Q + C and the gateway's upstream
// latency is Q + C + N. Steady state (medians): recsys Q 3 ms σ0.6, C 12 ms σ0.25; embedder
// Q 2 ms σ0.6, C 25 ms σ0.3; N 1.5/3/8 ms with probabilities 0.6/0.3/0.1. Every UTC day scales Q
// and C by 1 + 0.03 sin(2π·weekday/7 + φ) (mean 1 over a week). Steady-state jitter (P99/P50) is
// 1.8 (recsys) and 1.9 (embedder) for e2e and gateway alike.
//
// # Incidents (Incidents, Incident)
//
//	kind                    when (from end)  where                            what
//	network_jitter          -22h, 30 min     node-b, both models              30 % of requests get +200 ms on N only;
//	                                                                          gateway jitter 11 (recsys) / 7.3 (embedder),
//	                                                                          e2e untouched, mean N +60 ms
//	warmup_restart          -18h, 3 min      node-c (all GPUs)                restart: counters reset, new
//	                                                                          process_start_time_seconds, not ready and
//	                                                                          no traffic for LoadDuration (60 s), then
//	                                                                          WarmupDuration (2 min) with Q and C x8, x5,
//	                                                                          x3, x1.6 in 30 s steps (P95 exactly 8x)
//	compute_slowdown        -14h, 40 min     node-b recsys, GPUs 0-3          GPU memory climbs linearly from ~80 % to 92 %
//	                                                                          over the 90 min before, then 93-94 % with a
//	                                                                          2 min saw-tooth; C: 93 % at 2.5x + 7 % at
//	                                                                          350 ms (reallocation), mean x4.4; Q x1.5;
//	                                                                          jitter 14
//	gpu_idle_under_traffic  -11h, 15 min     node-a embedder, GPU 6           utilisation 0, model ready, traffic normal;
//	                                                                          XID 43 at the start; 25 % of requests fall
//	                                                                          back to the CPU path (fallback counter,
//	                                                                          C 45 ms); jitter 2.6
//	queue_surge             -8h, 30 min      node-a recsys v1.4.0             traffic x1.5, Q 20 ms σ1.0 (mean x9),
//	                                                                          C flat; e2e P99 28 → 213 ms; jitter 6.7
//	canary_slower           -4h, open        node-c recsys v1.5.0             the canary above (End = end + 30 days)
//
// Jitter > 5 exactly where a jitter source sits on the path: e2e and gateway in queue_surge and
// compute_slowdown, gateway only in network_jitter; everywhere else it stays below 3
// (TestJitterOnlyWhereCaused pins this).
//
// Errors: recsys 0.1 % errors + 0.02 % timeouts, embedder 0.15 % + 0.01 %; timeouts 1 % in the
// queue surge and 0.5 % in the slowdown. Confidence: recsys 0.86, embedder 0.91 (canaries
// -0.02 / +0.005), fallback answers 0.62.
//
// # Counters
//
// Counters grow by expected values, not samples: over any stretch where nothing changes, each
// bucket grows by ∫QPS dt × P(X ≤ le), so counts are non-integer and rate() and
// histogram_quantile() on them are exact. Values are cumulative since the instance's process
// start (reset at the restart) and computed in closed form, so live serving and written history
// agree to the last bit.
//
// # Truth accessors
//
// Names accept "" as "all" (a traffic-weighted mixture, like sum by (le)):
//
//	QPS, MeanQPS(from, to)                     expected rate at t; average over [from, to] (= rate())
//	Requests, Histogram                        exposed cumulative values at t
//	HistogramIncrease(from, to)                expected growth over a window (= increase())
//	LatencyQuantile, SegmentQuantile, Jitter   continuous quantiles of E2E, Queue, Compute, Network,
//	                                           Gateway, InputLength, BatchSize at t
//	BucketQuantile(from, to)                   what histogram_quantile gives over LatencyBuckets for a
//	                                           rate window whose first and last samples are from and to
//	BucketQuantileAt                           the same for the instantaneous bucket shares
//	HistogramQuantile                          Prometheus' interpolation, for exposed counts
//	SegmentMean, ErrorRatio, TimeoutRatio, FallbackRatio, ConfidenceMean, QueueDepth
//	Ready, ProcessStart, WarmupFactor          model_loading_status, restarts, warm-up multiplier
//	GPU                                        NVML-like GPUState (the probe's mock follows it)
//	Incidents, Incident, Instances, Models, Versions, StableVersion, CanaryVersion,
//	CanaryInstance, ModelGPUs, GPUsPerInstance, Start, End
//
// Prometheus 2.42 selects range samples in [t-range, t], both ends included; with history on
// the step grid, rate(x[5m]) at t equals MeanQPS(t-5m, t) and the histogram_quantile of it equals
// BucketQuantile(..., t-5m, t), to float rounding (the integration test checks 1e-9).
//
// # Naming and history
//
// Package expo names the measurements (the "custom" profile: the brief's Python
// prometheus_client service; see expo/custom.go for the series) and writes them. History is
// OpenMetrics (family by family, "# EOF", timestamps in seconds, job="inference", explicit
// instance) for `promtool tsdb create-blocks-from openmetrics --max-block-duration=1458h`: with
// promtool's default 2h block range it would re-parse the whole input once per 2 hours of history.
//
// History step: DefaultHistoryStep = 60 s. Measured on the 2-core development machine while other
// builds ran (load average ~6): 8 days are 671 series, 6.8 M samples, 1.0 GB of OpenMetrics,
// written in 1.9 s of CPU (8.6 s wall to disk); one promtool run over it took 36 s. Split in two
// halves imported concurrently (BuildHistoryTSDB), the whole build takes 20 s wall (13.6 s CPU):
// `time inferscope-loadgen --warm-test-cache`. A 15 s step would be 4x that, 30 s twice. With
// 60 s samples use rate windows of 2m or more (5m is what the tests use); a 1m window holds a
// single sample. The TSDB is 42 MB.
//
// # TSDB for tests
//
// TSDB(t) returns a hard-linked private copy of the cached blocks, ready for promtest.Start. The
// cache lives in $INFERSCOPE_TESTBED_CACHE or os.UserCacheDir()/inferscope-testbed/<key>, where
// key hashes the scenario and the generator version; a lock file makes concurrent test processes
// wait for one builder and the result is renamed into place atomically. Under -race the in-process
// build is about twice as slow; CI can run `inferscope-loadgen --warm-test-cache` first.
package testbed
