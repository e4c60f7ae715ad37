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
//	QPS, MeanQPS(from, to)                     expected rate at t; every request served in [from, to]
//	SampledMeanQPS(from, to, step)             what rate() gives on samples every step (restart edge)
//	Increase(counter, from, to, step)          expected growth of any exposed counter (Requests,
//	                                           RequestsOK, Errors, Timeouts, Fallbacks, PromptTokens,
//	                                           CachedTokens, Preemptions, Batches, CompileLookups,
//	                                           CompileHits); ratios of two are
//	                                           the windowed error/timeout/cache-hit/preemption ratios
//	                                           and Requests/Batches the mean batch size
//	Requests, Histogram                        exposed cumulative values at t
//	HistogramIncrease(from, to)                expected growth over a window (= increase())
//	SampledHistogramIncrease(…, step)          the same on samples every step, any bucket layout
//	                                           (expo.VLLMRequestLatencyBuckets, TGIDurationBuckets…)
//	LatencyQuantile, SegmentQuantile, Jitter   continuous quantiles of E2E, Queue, Compute, Network,
//	                                           Gateway, InputLength, BatchSize at t
//	BucketQuantile(from, to)                   what histogram_quantile gives over LatencyBuckets for a
//	                                           rate window whose first and last samples are from and to
//	BucketQuantileAt                           the same for the instantaneous bucket shares
//	HistogramQuantile                          Prometheus' interpolation, for exposed counts
//	SegmentMean, ErrorRatio, TimeoutRatio, FallbackRatio, ConfidenceMean, CacheHitRatio
//	QueueDepth, Running, KVCacheUsage          Little's law: waiting and executing requests; KV
//	                                           cache usage = Running / 8 (capped at 1), 0.97 for the
//	                                           slowed model in the compute slowdown
//	Ready, ProcessStart, WarmupFactor          model_loading_status, restarts, warm-up multiplier
//	GPU, GPUSnapshot, GPUUUID                  NVML-like GPUState; the probe's snapshot of a node
//	HostCPUBusy, HostNetworkRate,              the hosts' model (see Hosts) at t
//	HostMemUsedBytes, HostSource, Nodes
//	Incidents, Incident, Instances, Models, Versions, StableVersion, CanaryVersion,
//	CanaryInstance, ModelGPUs, GPUsPerInstance, Start, End, Node, ProbeInstance
//
// Prometheus 2.42 selects range samples in [t-range, t], both ends included; with history on
// the step grid, rate(x[5m]) at t equals SampledMeanQPS(t-5m, t, DefaultHistoryStep) and the
// histogram_quantile of it the HistogramQuantile of SampledHistogramIncrease over the naming's
// buckets, to float rounding (the integration tests check 1e-9). Away from restarts the sampled
// and unsampled accessors are equal.
//
// The restart edge: at node-c's restart the sample on the restart instant already shows the new
// process's count (0). The requests the old process served between its last sample and the
// restart are therefore invisible to Prometheus, as they are in production. MeanQPS counts them
// (it is the truth of what was served) and is higher than rate() over any window holding the
// restart, by up to a minute of traffic over the window (20 % for a 5m window ending at the
// restart); SampledMeanQPS, Increase and SampledHistogramIncrease with step > 0 leave them out
// and match Prometheus exactly. The grid is t.Truncate(step), the written history's.
//
// Other quantities: the prefix cache finds 35 % (recsys) / 55 % (embedder) of input elements,
// 5 % while warming up after a restart; the compute slowdown preempts 2 % of requests; batches
// follow the batch-size distribution (Triton's inference_count / exec_count). The custom
// service's compiled-graph (JIT) cache is looked up once per executed batch (CompileLookups =
// Batches) and hits 98.5 % of the time; after a restart it is cold and hits 0.985/√warm-up
// factor (35 %, 44 %, 57 %, 78 % in the four 30 s warm-up steps): Increase(CompileHits, …) /
// Increase(CompileLookups, …) is the windowed hit ratio.
//
// # Hosts (expo.NodeTargets, node_exporter's names)
//
// Every node (Nodes: node-a, node-b, node-c) is a host with 8 CPUs and 1 TiB of memory, booted
// 2 h before its first inference process; its counters never reset (the inference restart on
// node-c is not a reboot). Load follows the requests the node serves, so it follows the diurnal
// traffic and every incident's traffic change:
//
//	CPU      per CPU 3 % user + 1.5 % system + 0.4 % iowait background; each request costs 30 µs of
//	         CPU per input element (recsys ~6 ms, embedder ~12 ms), 75 % user / 25 % system,
//	         ×(1 + 40 × preemption share) (×1.8 in the compute slowdown: preempted requests are
//	         re-tokenised and their pinned buffers rebuilt) plus 45 ms per CPU-fallback request;
//	         spread over the CPUs with weights 0.8 … 1.2. While a process loads its models
//	         (LoadDuration after each start) every CPU waits 15 % in iowait. Busy ≈ 21 % at the
//	         daily mean, 27 % on node-b in the slowdown (HostCPUBusy).
//	memory   96 GiB base + 48 GiB per serving process (growing while it loads) + 16 GiB × request
//	         rate / mean rate (HostMemUsedBytes); MemAvailable = total − used.
//	disk     nvme0n1 busy 1 % + 20 µs per request (request log), 90 % while models load.
//	network  eth0 received: 40 kB/s + per request 600 B header + 4 B per input element;
//	         transmitted: 25 kB/s + per response 640 B (recsys) / 3600 B (embedder)
//	         (HostNetworkRate).
//
// The loadgen serves them live on GET /metrics/node?node=node-a (a target per host, job "node",
// instance "<node>:9100"; provisioning/prometheus/prometheus.yml has the scrape job) and the
// history holds them with the same labels, values equal at every sample (TestLiveNodeMatchesHistory).
// Series: 8 CPUs × 4 modes (idle, user, system, iowait) + MemTotal, MemAvailable, disk IO time,
// network receive / transmit = 37 per node.
//
// # Namings (package expo)
//
// inferscope-loadgen --profile and TSDBOptions.Profile play the same scenario in six engines'
// shapes; metric and label names come from pkg/profile, so a naming cannot drift from the
// profile the engine reads (expo's per-naming files list every series):
//
//	custom      the brief's Python prometheus_client service: histograms over the brief's
//	            buckets, status label on requests, model_loading_status, process start,
//	            running requests, a compiled-graph (JIT) cache (hits / requests)
//	vllm        V1 histograms over vLLM's coarse buckets (0.3 s first: millisecond requests all
//	            interpolate inside it), finished_reason on request_success_total, running /
//	            waiting, KV cache usage, prefix cache hits / queries (tokens), preemptions, TTFT
//	            (= e2e: one output token), an empty inter-token histogram; no version label, so
//	            a model's versions on an instance are one series set (their sums)
//	triton      cumulative µs counters (request, queue, compute input/infer/output; successful
//	            requests only, request = queue + compute), success / failure{reason} (BACKEND =
//	            errors, REJECTED = timeouts), inference / execution counts, pending count,
//	            response cache counters (never hit), nv_gpu_utilization per gpu_uuid; no
//	            histograms, summaries or load state
//	torchserve  µs counters over the answered requests only (latency includes queue), over
//	            ts_inference_requests_total (every request: the means are biased low by the failed
//	            share, Scenario.AnsweredTotal), host-level Requests2XX / Requests5XX (errors +
//	            timeouts) and GPUUtilization (%)
//	tgi         histograms over TGI's 35 geometric duration buckets (0.15 ms … 146 s, le written
//	            as Rust does), 100 input-length buckets, queue size, batch size (= running),
//	            request count / success / failure{err}; one router per model, whose scrape
//	            configuration adds model_name (expo.TGIModelLabel: set it as the model label);
//	            versions merged; no process start or load state
//	sglang      SGLang's histograms over its default buckets (e2e and TTFT from 0.1 s, queue time
//	            from 0), num_requests_total and num_aborted_requests_total (timeouts; errors are
//	            finished requests), running / queue gauges and token usage with the scheduler's
//	            tp_rank / pp_rank / moe_ep_rank labels, prompt and cached tokens (prefix cache),
//	            retracted requests (preemptions), TTFT (= e2e), an empty inter-token histogram;
//	            no version label (versions merged), no process start or load state
//
// Roles an engine lacks are absent, exactly as pkg/profile's Missing says. Live /metrics and
// history are the same numbers in every naming (TestLiveMatchesHistory).
//
// The mixed fleet (--profile fleet, TSDBOptions{Profile: "fleet"}) plays the six together in
// one Prometheus: every server serves its own copy of the scenario's models on its own port of
// each host (expo.FleetInstance: custom on :8000 with the scenario's own model names, vLLM on
// :8001 as vllm-recsys-ranker, Triton :8002, TorchServe :8003, TGI :8004, SGLang :8005;
// expo.FleetModel), in
// its own naming, so each model's truth is the scenario's model it copies. "fleet-<server>"
// writes one server's part alone (the same series), to compare a fleet with that server by
// itself. Both hold 2 days by default (DefaultTSDBDays).
//
// Behind a gateway (--profile vllm+ingress-nginx or triton+ingress-nginx, expo.BehindIngressNginx):
// the server's own targets plus an ingress-nginx controller (instance
// ingress-nginx-controller:10254, job ingress-nginx) in front of every instance, one Kubernetes
// service per model (expo.IngressService: "<model>-svc"), whose
// nginx_ingress_controller_response_duration_seconds observes Q + C + N per request (Gateway) and
// never resets (the controller does not restart with a server). The controller names no upstream
// pod, so the network segment through it is the model's over all instances: network_jitter shows
// as +60 ms × node-b's third of the traffic. 2 days by default.
//
// # History
//
// History is OpenMetrics (family by family, "# EOF", timestamps in seconds, job="inference",
// explicit instance) for `promtool tsdb create-blocks-from openmetrics --max-block-duration=1458h`:
// with promtool's default 2h block range it would re-parse the whole input once per 2 hours of
// history. History step: DefaultHistoryStep = 60 s; with it use rate windows of 2m or more (5m
// is what the tests use); a 1m window holds a single sample.
//
// Host series ride along from the history's start (job="node", see Hosts), and GPU series
// (HistoryTargets, GPUTargets): every node's 8 GPUs, rendered from
// GPUSnapshot by the probe's own exporter (pkg/probe/promexport), with the labels a Prometheus
// scraping the probe stores: job="inferscope-probe", instance="<node>:9835", node="<node>"
// (provisioning/prometheus/prometheus.yml adds node). Only core families are kept
// (GPUHistoryFamilies): utilisation, memory used / total (dcgm: FB_USED / FREE / TOTAL),
// temperature, power, clock-event reasons, ECC, XID. The dcgm naming holds DCGM_FI_DEV_* names
// only, with dcgm-exporter's labels (gpu, UUID, device, modelName, Hostname, pod, namespace,
// container). TestGPUHistoryIsWhatTheProbeServes compares the history with a scrape of the real
// probe on the scenario's mock GPUs, label for label and value for value.
//
// Build cost, measured on the 2-core development machine while other builds ran (load average
// 5-10: wall times swing with the load, CPU times are steadier), `inferscope-loadgen --profile=P
// --tsdb-out=… --end=2026-11-23T12:00:00Z --gpu-history-days=2` (series: inference + GPU):
//
//	variant                                  series     wall    CPU (loadgen + promtool)  TSDB
//	custom 8 d, no GPU (as before GPU)        671        22 s   14.0 s (before: 15.9 s)    42 MB
//	custom 8 d, GPU last 2 d (TSDB default)   671+385    31 s   20.0 s                     43 MB
//	custom 8 d, GPU all 8 d                   671+385    79 s   36.6 s
//	vllm 8 d, GPU 2 d                         861+385    53 s   25.5 s                     54 MB
//	triton 8 d, GPU 2 d                       144+385    16 s    7.7 s                      9 MB
//	torchserve 8 d, GPU 2 d                    54+385    14 s    6.1 s                      5 MB
//	tgi 8 d, GPU 2 d                         1560+385    78 s   41.6 s                     97 MB
//	tgi 2 d, GPU 2 d (TSDB default)          1560+385    20 s
//	--warm-test-cache (all WarmVariants)                103 s   82 s
//	custom 8 d, GPU 2 d, hosts (TSDB default) 671+385+111  23 s   21.1 s (19.4 s without hosts) 52 MB
//
// (The last row measured later, load average ~1.5: hosts add about 2 s of CPU and 9 MB.)
//
// (The dcgm GPU naming has 240 series instead of 385.) Rendering GPU history through the
// exporter costs 1-2 s of CPU per simulated day (one exporter run per node and minute:
// BenchmarkGPUHistoryDay), which is why test TSDBs hold GPU series for the last
// DefaultGPUHistoryDays (2) only; inferscope-loadgen writes them over the whole history unless
// --gpu-history-days says otherwise.
//
// # Scaled fleets (Scaled, package scaledb)
//
// Scaled(end, factor) is a fleet factor times the default one, 1-100 (Scales: 1, 10, 100 =
// 300 instances, 2,400 GPUs, 24 models): factor groups, each Default(end) on its own nodes
// (node-a-07:8000 …) serving a copy of the two models (recsys-ranker-03 …: copy g mod 12, so at
// 100× each model runs on 8 or 9 groups), with the same truth model and the same incidents at
// the same times on its nodes; group 0 is Default itself, byte for byte. Relabel maps Default's
// label values (instances on every port, nodes, models, GPU UUIDs) to a group's, and
// TestScaledGroupIsDefaultRenamed checks that a group's exposition at every incident equals
// Default's renamed. So the groups' samples are equal and the scaled history is written from
// Default's cached blocks with the names changed, directly with Prometheus' TSDB library
// (scaledb.Cached, tbtest.ScaledTSDB; one block per day), at the default 60 s step: the
// OpenMetrics → promtool path would cost 100 × the default's 14-20 s of CPU at 100×. Cached as
// scaled-v3-<factor>x-<the default's key>.
//
// # The incident corpus (corpus.go, corpus_scenario.go, corpus_tsdb.go)
//
// GenerateCorpus(CorpusOptions{Seed}) draws cases from a seed: per server naming (CorpusServers)
// each kind its metrics can show (serverKinds: a version label for canaries and upgrades, memory
// that grows with use for memory pressure, KV-cache usage and preemptions for KV exhaustion, an
// input-length signal for input shifts, the gateway's upstream time for jitter) at magnitudes
// from barely visible to severe, plus a warm-up and negative controls (quiet and busy hour, a
// faster version, a deploy). CorpusScenario(server, cases, end) plays them on a fleet of its
// own: node-a..node-d:8000 (node-d without a GPU probe), five models with their own traffic
// curves and GPUs (generation models with seconds of compute on vLLM, SGLang and TGI; vLLM's
// GPUs at its 90 % pre-allocation), each case on its own model and instance in its own hour of
// the last two days, CorpusHistoryDays (9) of history so every case has 7 clean days before it.
// A case is an Incident too (its kind names differ from the default scenario's, so none of the
// default incidents' logic applies); its effects hang off Scenario.ext, nil for Default, whose
// history is unchanged. CorpusTSDB builds and caches a fleet's history like PrivateTSDB.
// TestCorpusOnsetVisible checks every case's onset in the truth accessors as its kind says.
//
// # TSDB for tests
//
// tbtest.TSDBFor(t, TSDBOptions{Profile, GPUNaming, Days, GPUDays}) (package tbtest, so that
// this package does not import testing) returns a hard-linked private copy of the cached
// blocks of that variant (PrivateTSDB), ready for promtest.Start; tbtest.TSDB(t) is
// tbtest.TSDBFor(t, TSDBOptions{}): custom naming, the probe's GPU naming, 8 days, GPU series the last 2 days.
// Defaults: Days = DefaultTSDBDays(profile) = 8, except tgi = 2 (its buckets make it the
// slowest; ask for Days: 8 to test a TGI baseline); GPUDays = 2; GPUNaming inferscope.
//
//	variant (WarmVariants)          days  GPU                  what it is for
//	{}                              8     inferscope, last 2   custom: every query type, baseline
//	{Profile: vllm}                 8     inferscope, last 2   vLLM histograms, baseline
//	{Profile: triton}               8     inferscope, last 2   µs-counter means, baseline of means
//	{Profile: triton, GPUNaming:    8     dcgm, last 2         the same with dcgm-exporter's GPU
//	 dcgm}                                                     names
//	{Profile: torchserve}           8     inferscope, last 2   µs-counter means, host 5xx
//	{Profile: tgi}                  2     inferscope, last 2   TGI histograms (no baseline)
//	{Profile: sglang}               8     inferscope, last 2   SGLang histograms, compute = e2e − queue
//
// Any other combination works too (built on first use). The cache lives in
// $INFERSCOPE_TESTBED_CACHE or os.UserCacheDir()/inferscope-testbed/<key>, where key names the
// variant and hashes the scenario, the generator version and the variant's exposition at the end
// and in every incident (so editing a naming or the GPU rendering invalidates it); a lock file makes concurrent test
// processes wait for one builder and the result is renamed into place atomically. Under -race
// the in-process build is about twice as slow; CI should run `inferscope-loadgen
// --warm-test-cache` first, which builds every WarmVariants entry (about 90 s of CPU in all);
// with a warm cache `go test -race` of pkg/testbed takes about 20 s.
package testbed
