package profile

// Shorthands for the profile tables.
func hist(name, unit, note string) Measure {
	return Measure{Kind: Histogram, Metrics: []string{name}, Scale: 1, Unit: unit, Note: note}
}

func gauge(name string, scale float64, unit, note string) Measure {
	return Measure{Kind: Gauge, Metrics: []string{name}, Scale: scale, Unit: unit, Note: note}
}

func counter(unit, note string, names ...string) Measure {
	return Measure{Kind: Counter, Metrics: names, Scale: 1, Unit: unit, Note: note}
}

func counterWhere(name string, matchers map[string]string, unit, note string) Measure {
	return Measure{Kind: Counter, Metrics: []string{name}, Matchers: matchers, Scale: 1, Unit: unit, Note: note}
}

const processStartNote = "process_start_time_seconds of the scrape target"

// The built-in profiles, in detection-priority order.
var all = []Profile{custom, vllm, triton, torchserve, tgi, sglang}

// custom is the brief's own instrumentation (a Python prometheus_client
// service), named as the test bed's exposition names it: request outcomes
// are a status label ("ok", "error", "timeout") on inference_requests_total.
var custom = Profile{
	Name: "custom", Title: "Custom (prometheus_client)",
	ModelLabel: "model_name", VersionLabel: "model_version", InstanceLabel: "instance",
	LabelNote: "inference_queue_size and model_loading_status carry model_name only; inference_gpu_util_percent carries gpu_id only",
	Roles: map[Role][]Measure{
		Requests:    {counter(UnitRequests, "all outcomes (status label summed)", "inference_requests_total")},
		Errors:      {counterWhere("inference_requests_total", map[string]string{"status": "error"}, UnitRequests, "")},
		Timeouts:    {counterWhere("inference_requests_total", map[string]string{"status": "timeout"}, UnitRequests, "")},
		Latency:     {hist("inference_latency_seconds", UnitSeconds, "")},
		QueueTime:   {hist("inference_queue_seconds", UnitSeconds, "")},
		ComputeTime: {hist("inference_compute_seconds", UnitSeconds, "")},
		NetworkTime: {hist("inference_gateway_upstream_seconds", UnitSeconds, "upstream time seen by the gateway; the network segment is this minus the service's own latency")},
		QueueDepth:  {gauge("inference_queue_size", 1, UnitRequests, "")},
		Waiting:     {gauge("inference_queue_size", 1, UnitRequests, "")},
		Running:     {gauge("inference_requests_running", 1, UnitRequests, "")},
		LoadState:   {gauge("model_loading_status", 1, UnitCount, "1 loaded and serving, 0 loading")},
		BatchSize:   {hist("inference_batch_size", UnitRequests, "requests per executed batch")},
		InputLength: {hist("inference_input_length", UnitElements, "")},
		Confidence: {{Kind: Summary, Metrics: []string{"inference_prediction_confidence"}, Scale: 1, Unit: UnitRatio,
			Note: "a summary without quantiles: the mean confidence (sum/count)"}},
		Fallback:     {counter(UnitRequests, "requests answered by the fallback path", "inference_fallback_total")},
		ProcessStart: {gauge("process_start_time_seconds", 1, UnitUnixSeconds, processStartNote)},
		GPUUtil:      {gauge("inference_gpu_util_percent", 0.01, UnitRatio, "reported in percent by the service")},
		CacheHits:    {counter(UnitCount, "compiled-graph (JIT) cache hits", "inference_compile_cache_hits_total")},
		CacheQueries: {counter(UnitCount, "compiled-graph (JIT) cache lookups, one per executed batch", "inference_compile_cache_requests_total")},
	},
	Missing: map[Role]string{
		KVCacheUsage:    "the custom service has no KV cache",
		Preemptions:     "the custom service does not preempt requests",
		TimeToFirst:     "the custom service does not stream tokens",
		InterToken:      "the custom service does not stream tokens",
		PrefillTime:     "the custom service " + noPrefillDecode,
		DecodeTime:      "the custom service " + noPrefillDecode,
		WaitingDeferred: "the custom service " + noDeferred,
		Rejections:      "the custom service " + noRejections,
		HTTPErrors:      "the custom service " + noHTTP,
		HTTPRequests:    "the custom service " + noHTTP,
	},
	Signature: []string{
		"inference_requests_total", "inference_latency_seconds_bucket", "inference_queue_seconds_bucket",
		"inference_compute_seconds_bucket", "inference_queue_size", "model_loading_status",
	},
}

// VLLMInferenceHandlers are the OpenAI-compatible API server's routes that run the model (those
// vLLM's sleep mode answers with 503): HTTP errors of other routes (/health, /v1/models,
// /metrics, /tokenize) are not failed inference requests.
var VLLMInferenceHandlers = []string{
	"/v1/completions", "/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/pooling", "/classify",
	"/score", "/v1/score", "/rerank", "/v1/rerank", "/v2/rerank", "/v1/audio/transcriptions", "/v1/audio/translations", "/invocations",
}

// HTTP5xx are the status label values of a server error: prometheus-fastapi-instrumentator
// groups them as "5xx" by default (vLLM's setting) and writes the code itself when grouping is off.
var HTTP5xx = []string{"5xx", "500", "501", "502", "503", "504", "505", "506", "507", "508", "510", "511"}

const (
	vllmDeferredNote   = "waiting requests held back for a reason other than capacity (reason=\"deferred\": e.g. waiting for a LoRA adapter slot, a remote KV transfer or a grammar); the rest of vllm:num_requests_waiting (reason=\"capacity\") waits for room in the batch or the KV cache"
	vllmRejectionsNote = "requests refused at admission with HTTP 503 (every reason label): they never reach the engine, so vllm:request_success_total does not count them"
	vllmHTTPErrorsNote = "HTTP 5xx answers of the inference endpoints (http_requests_total of the API server, no model label): admission rejections (503) and engine failures that failed the whole response; an error after a streamed response began answers 200 and is counted by finished_reason=\"error\" only"
	noPrefillDecode    = "splits its compute into no prefill and decode phases"
	noDeferred         = "exports no reason for waiting requests; every waiting request is taken as load"
	noRejections       = "exports no admission-rejection counter apart from its failures"
	noHTTP             = "exports no HTTP status counter of its own; its failure counter is the errors"
)

// vllm follows vLLM's V1 Prometheus logger: histograms in seconds with
// coarse buckets (0.3 s upwards), labels model_name and engine. Older
// releases named the KV cache gauge and the prefix cache counters with a
// gpu_ prefix; those names are the second choice.
var vllm = Profile{
	Name: "vllm", Title: "vLLM",
	ModelLabel: "model_name", VersionLabel: "", InstanceLabel: "instance",
	LabelNote: "vLLM has no version label (one served model name per server); the engine label is the data-parallel engine index",
	Roles: map[Role][]Measure{
		Requests: {counter(UnitRequests, "finished requests, every finished_reason", "vllm:request_success_total")},
		Errors: {
			counterWhere("vllm:request_success_total", map[string]string{"finished_reason": "error"}, UnitRequests,
				"requests that ended with an engine error (finished_reason=\"error\", recent releases)"),
		},
		Latency:     {hist("vllm:e2e_request_latency_seconds", UnitSeconds, "coarse buckets from 0.3 s: short requests all fall in the first bucket")},
		QueueTime:   {hist("vllm:request_queue_time_seconds", UnitSeconds, "time in the WAITING state")},
		ComputeTime: {hist("vllm:request_inference_time_seconds", UnitSeconds, "time in the RUNNING state (prefill + decode)")},
		PrefillTime: {hist("vllm:request_prefill_time_seconds", UnitSeconds, "time in the RUNNING state up to the first token (the prompt's prefill)")},
		DecodeTime:  {hist("vllm:request_decode_time_seconds", UnitSeconds, "time in the RUNNING state from the first to the last token (decode)")},
		QueueDepth:  {gauge("vllm:num_requests_waiting", 1, UnitRequests, "")},
		Running:     {gauge("vllm:num_requests_running", 1, UnitRequests, "")},
		Waiting:     {gauge("vllm:num_requests_waiting", 1, UnitRequests, "")},
		WaitingDeferred: {{Kind: Gauge, Metrics: []string{"vllm:num_requests_waiting_by_reason"}, Matchers: map[string]string{"reason": "deferred"},
			Scale: 1, Unit: UnitRequests, Note: vllmDeferredNote}},
		Rejections: {counter(UnitRequests, vllmRejectionsNote, "vllm:admission_rejections_total")},
		HTTPErrors: {{Kind: Counter, Metrics: []string{"http_requests_total"}, OneOf: map[string][]string{"handler": VLLMInferenceHandlers, "status": HTTP5xx},
			PerInstance: true, Scale: 1, Unit: UnitRequests, Note: vllmHTTPErrorsNote}},
		HTTPRequests: {{Kind: Counter, Metrics: []string{"http_requests_total"}, OneOf: map[string][]string{"handler": VLLMInferenceHandlers},
			PerInstance: true, Scale: 1, Unit: UnitRequests, Note: "HTTP answers of the inference endpoints, every status (the API server's http_requests_total)"}},
		LoadState: {
			{Kind: Gauge, Metrics: []string{"vllm:engine_sleep_state"}, Matchers: map[string]string{"sleep_state": "awake"}, Scale: 1, Unit: UnitCount,
				Note: "sleep_state=\"awake\": 1 awake and serving, 0 asleep (sleep level 1 offloads the weights, level 2 discards them; inference endpoints answer 503 meanwhile)"},
			gauge("vllm:engine_healthy", 1, UnitCount, "1 the engine is healthy, 0 not (releases without the sleep-state gauge)"),
		},
		CacheHits: {
			counter(UnitTokens, "prefix cache hits, in tokens", "vllm:prefix_cache_hits_total"),
			counter(UnitTokens, "prefix cache hits, in tokens (pre-0.10 name)", "vllm:gpu_prefix_cache_hits_total"),
		},
		CacheQueries: {
			counter(UnitTokens, "prefix cache queries, in tokens", "vllm:prefix_cache_queries_total"),
			counter(UnitTokens, "prefix cache queries, in tokens (pre-0.10 name)", "vllm:gpu_prefix_cache_queries_total"),
		},
		KVCacheUsage: {
			gauge("vllm:kv_cache_usage_perc", 1, UnitRatio, "a fraction 0..1 despite the name"),
			gauge("vllm:gpu_cache_usage_perc", 1, UnitRatio, "a fraction 0..1 despite the name (pre-0.10 name)"),
		},
		Preemptions: {counter(UnitRequests, "", "vllm:num_preemptions_total")},
		BatchSize:   {gauge("vllm:num_requests_running", 1, UnitRequests, "continuous batching: the running requests are the batch")},
		InputLength: {hist("vllm:request_prompt_tokens", UnitTokens, "")},
		TimeToFirst: {hist("vllm:time_to_first_token_seconds", UnitSeconds, "")},
		InterToken: {
			hist("vllm:inter_token_latency_seconds", UnitSeconds, ""),
			hist("vllm:time_per_output_token_seconds", UnitSeconds, "older name of the inter-token latency"),
		},
		ProcessStart: {gauge("process_start_time_seconds", 1, UnitUnixSeconds,
			processStartNote+"; absent when vLLM runs several API server processes (Prometheus multiprocess mode)")},
	},
	Missing: map[Role]string{
		Timeouts:    "vLLM has no timeout counter; requests the client gave up on end with finished_reason=\"abort\"",
		NetworkTime: "the network segment needs a gateway (or proxy) upstream-time histogram; vLLM only measures its own time",
		Confidence:  "vLLM does not export prediction confidence; it is a business metric the application has to expose",
		Fallback:    "vLLM has no fallback path; fallbacks are counted by the application in front of it",
		GPUUtil:     "vLLM exports no GPU utilisation; it comes from the Inferscope probe (or dcgm-exporter)",
	},
	Signature: []string{
		"vllm:e2e_request_latency_seconds_bucket", "vllm:request_queue_time_seconds_bucket", "vllm:num_requests_running",
		"vllm:num_requests_waiting", "vllm:request_success_total", "vllm:time_to_first_token_seconds_bucket",
		"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
	},
}

const tritonMeanNote = "Triton exports cumulative µs counters, not histograms: percentiles need the summary metrics (--metrics-config summary_latencies=true); showing the mean instead"

// tritonSummaryNote: Triton's summaries are per model, version and, on GPU instances, per GPU.
const tritonSummaryNote = "summary quantiles over a sliding window, per instance (and per GPU on GPU instances): they cannot be aggregated across instances or GPUs"

// triton follows Triton Inference Server's metrics (v2.71): cumulative µs counters per model and
// version (and per gpu_uuid on GPU instances), optional summaries, a first-response histogram in
// milliseconds, and the metrics its vLLM and TensorRT-LLM backends add with Triton's labels.
var triton = Profile{
	Name: "triton", Title: "Triton Inference Server",
	ModelLabel: "model", VersionLabel: "version", InstanceLabel: "instance",
	LabelNote: "GPU instances put gpu_uuid on the per-request metrics (summed away; summary quantiles stay per GPU); failures carry a reason label (OTHER, BACKEND, CANCELED, REJECTED) in recent releases",
	Roles: map[Role][]Measure{
		Requests: {counter(UnitRequests, "successes + failures (successes include response-cache hits)", "nv_inference_request_success", "nv_inference_request_failure")},
		Errors:   {counter(UnitRequests, "", "nv_inference_request_failure")},
		Timeouts: {counterWhere("nv_inference_request_failure", map[string]string{"reason": "REJECTED"}, UnitRequests,
			"closest Triton signal: requests the scheduler rejected (queue full or queue timeout), failure reason=\"REJECTED\"")},
		// The request summary is off for models with the response cache on: the engine reads
		// the summary for the models that have it and the mean for the others.
		Latency: {
			{Kind: Summary, Metrics: []string{"nv_inference_request_summary_us"}, QuantileLabel: "quantile", Scale: 1e-6, Unit: UnitSeconds,
				Note: tritonSummaryNote},
			{Kind: MicrosecondCounter, Metrics: []string{"nv_inference_request_duration_us"}, Count: []string{"nv_inference_request_success"},
				Scale: 1e-6, Unit: UnitSeconds, Note: tritonMeanNote + "; cache hits included"},
		},
		QueueTime: {
			{Kind: Summary, Metrics: []string{"nv_inference_queue_summary_us"}, QuantileLabel: "quantile", Scale: 1e-6, Unit: UnitSeconds,
				Note: tritonSummaryNote},
			{Kind: MicrosecondCounter, Metrics: []string{"nv_inference_queue_duration_us"}, Count: []string{"nv_inference_request_success"},
				Scale: 1e-6, Unit: UnitSeconds, Note: tritonMeanNote + "; cache hits included"},
		},
		ComputeTime: {
			{Kind: MicrosecondCounter,
				Metrics:    []string{"nv_inference_compute_input_duration_us", "nv_inference_compute_infer_duration_us", "nv_inference_compute_output_duration_us"},
				Count:      []string{"nv_inference_request_success"},
				CountMinus: []string{"nv_cache_num_hits_per_model"}, Scale: 1e-6, Unit: UnitSeconds,
				Note: tritonMeanNote + "; compute = input + infer + output, over the executed requests (successes − response-cache hits, which record no compute time)"},
		},
		QueueDepth: {gauge("nv_inference_pending_request_count", 1, UnitRequests, "requests received and not yet executing")},
		Waiting:    {gauge("nv_inference_pending_request_count", 1, UnitRequests, "requests received and not yet executing")},
		Running: {
			gauge("vllm:num_requests_running", 1, UnitRequests, "from Triton's vLLM backend (vllm:* with Triton's model and version labels)"),
			{Kind: Gauge, Metrics: []string{"nv_trt_llm_request_metrics"}, Matchers: map[string]string{"request_type": "scheduled"}, Scale: 1, Unit: UnitRequests,
				Note: "from Triton's TensorRT-LLM backend: scheduled requests (request_type=\"scheduled\")"},
		},
		CacheHits: {counter(UnitRequests, "response cache hits", "nv_cache_num_hits_per_model")},
		CacheQueries: {counter(UnitRequests, "response cache lookups (hits + misses)",
			"nv_cache_num_hits_per_model", "nv_cache_num_misses_per_model")},
		KVCacheUsage: {
			gauge("vllm:kv_cache_usage_perc", 1, UnitRatio, "from Triton's vLLM backend; a fraction 0..1 despite the name"),
			gauge("vllm:gpu_cache_usage_perc", 1, UnitRatio, "from Triton's vLLM backend (pre-0.10 name); a fraction 0..1 despite the name"),
			{Kind: Gauge, Metrics: []string{"nv_trt_llm_kv_cache_block_metrics"}, Matchers: map[string]string{"kv_cache_block_type": "fraction"}, Scale: 1, Unit: UnitRatio,
				Note: "from Triton's TensorRT-LLM backend: fraction of KV cache blocks used (kv_cache_block_type=\"fraction\")"},
		},
		BatchSize: {{Kind: CounterRatio, Metrics: []string{"nv_inference_count"}, Count: []string{"nv_inference_exec_count"}, Scale: 1, Unit: UnitRequests,
			Note: "average batch size = inferences / executions (cache hits are neither)"}},
		TimeToFirst: {
			{Kind: Histogram, Metrics: []string{"nv_inference_first_response_histogram_ms"}, Scale: 1e-3, Unit: UnitSeconds,
				Note: "time to the first response of each request (decoupled or not), a histogram in milliseconds (--metrics-config histogram_latencies=true; default buckets 100, 500, 2000, 5000 ms)"},
			hist("vllm:time_to_first_token_seconds", UnitSeconds, "from Triton's vLLM backend"),
		},
		InterToken: {
			hist("vllm:inter_token_latency_seconds", UnitSeconds, "from Triton's vLLM backend"),
			hist("vllm:time_per_output_token_seconds", UnitSeconds, "from Triton's vLLM backend (older name of the inter-token latency)"),
		},
		GPUUtil: {gauge("nv_gpu_utilization", 1, UnitRatio, "from Triton's own DCGM collection, per gpu_uuid")},
	},
	Missing: map[Role]string{
		NetworkTime:     "the network segment needs a gateway (or proxy) upstream-time histogram; Triton only measures its own time (server overhead = request − queue − compute)",
		Preemptions:     "Triton does not preempt requests (its vLLM backend does not export vLLM's preemption counter)",
		LoadState:       "Triton exports no model readiness metric (readiness is its /v2/models/{name}/ready API); warm-up is taken from counter resets and first appearance, and nv_model_load_duration_secs says how long each load took",
		InputLength:     "Triton exports no input size distribution",
		Confidence:      "Triton does not export prediction confidence; it is a business metric the application has to expose",
		Fallback:        "Triton has no fallback path; fallbacks are counted by the application in front of it",
		ProcessStart:    "Triton's metrics endpoint has no process_start_time_seconds; restarts are detected from counter resets",
		PrefillTime:     "Triton's core metrics have no prefill/decode split (its compute is input + infer + output)",
		DecodeTime:      "Triton's core metrics have no prefill/decode split (its compute is input + infer + output)",
		WaitingDeferred: "Triton " + noDeferred,
		Rejections:      "Triton counts rejected requests as nv_inference_request_failure{reason=\"REJECTED\"}, read as its timeouts",
		HTTPErrors:      "Triton " + noHTTP,
		HTTPRequests:    "Triton " + noHTTP,
	},
	Signature: []string{
		"nv_inference_request_success", "nv_inference_request_failure", "nv_inference_request_duration_us",
		"nv_inference_queue_duration_us", "nv_inference_compute_infer_duration_us", "nv_inference_count",
		"nv_inference_exec_count", "nv_inference_pending_request_count",
	},
	// Triton's vLLM backend serves vllm:* with Triton's model and version labels: a model carrying
	// them under "model" is Triton's, not a vLLM server's.
	Backends: []string{
		"vllm:e2e_request_latency_seconds_bucket", "vllm:num_requests_running", "vllm:num_requests_waiting",
		"vllm:request_success_total", "vllm:time_to_first_token_seconds_bucket", "vllm:kv_cache_usage_perc",
		"vllm:gpu_cache_usage_perc", "vllm:request_queue_time_seconds_bucket",
	},
	DeviceLabel: "gpu_uuid",
	LoadTime: Measure{Kind: Gauge, Metrics: []string{"nv_model_load_duration_secs"}, Scale: 1, Unit: UnitSeconds,
		Note: "seconds the model's last load took"},
}

const torchserveMeanNote = "TorchServe exports cumulative µs counters, not histograms: showing the mean, percentiles do not exist; " +
	"the durations are summed over answered requests only but ts_inference_requests_total counts every request received, " +
	"so under errors the mean is biased low"

// torchserve follows TorchServe's Prometheus metrics mode (metrics_mode=prometheus; the
// default, log, serves none). Its inference latency runs from request arrival to response
// (queue included) and is only recorded for answered requests, while the request counter
// counts every request on receipt: the means are biased low under errors.
var torchserve = Profile{
	Name: "torchserve", Title: "TorchServe",
	ModelLabel: "model_name", VersionLabel: "model_version", InstanceLabel: "instance",
	LabelNote: "model_version is \"default\" for unversioned models; the per-host Requests5XX and GPUUtilization metrics carry no model label",
	Roles: map[Role][]Measure{
		Requests: {counter(UnitRequests, "inference requests received", "ts_inference_requests_total")},
		Errors: {{Kind: Counter, Metrics: []string{"Requests5XX"}, PerInstance: true, Scale: 1, Unit: UnitRequests,
			Note: "HTTP 5xx responses of the whole host (no model label)"}},
		Latency: {{Kind: MicrosecondCounter, Metrics: []string{"ts_inference_latency_microseconds"}, Count: []string{"ts_inference_requests_total"},
			Scale: 1e-6, Unit: UnitSeconds, Note: torchserveMeanNote}},
		QueueTime: {{Kind: MicrosecondCounter, Metrics: []string{"ts_queue_latency_microseconds"}, Count: []string{"ts_inference_requests_total"},
			Scale: 1e-6, Unit: UnitSeconds, Note: torchserveMeanNote}},
		ComputeTime: {{Kind: MicrosecondCounter, Metrics: []string{"ts_inference_latency_microseconds"}, Minus: []string{"ts_queue_latency_microseconds"},
			Count: []string{"ts_inference_requests_total"}, Scale: 1e-6, Unit: UnitSeconds,
			Note: torchserveMeanNote + "; compute = inference latency − queue latency"}},
		GPUUtil: {gauge("GPUUtilization", 0.01, UnitRatio, "per host and DeviceId, in percent, sampled once a minute")},
	},
	Missing: map[Role]string{
		Timeouts:        "TorchServe has no timeout counter; timed-out requests are among the 5xx responses",
		NetworkTime:     "the network segment needs a gateway (or proxy) upstream-time histogram; TorchServe only measures its own time",
		QueueDepth:      "TorchServe exports no queue length; queue time is in ts_queue_latency_microseconds",
		Running:         "TorchServe exports no count of executing requests",
		Waiting:         "TorchServe exports no queue length",
		CacheHits:       "TorchServe has no cache metrics",
		CacheQueries:    "TorchServe has no cache metrics",
		KVCacheUsage:    "TorchServe has no KV cache metrics",
		Preemptions:     "TorchServe does not preempt requests",
		LoadState:       "TorchServe exports no readiness metric (worker status is in its management API); warm-up is taken from counter resets and first appearance",
		BatchSize:       "TorchServe exports no batch size distribution",
		InputLength:     "TorchServe exports no input size distribution",
		TimeToFirst:     "TorchServe exports no time to first token",
		InterToken:      "TorchServe exports no inter-token latency",
		Confidence:      "TorchServe does not export prediction confidence; a handler can publish it as a custom metric",
		Fallback:        "TorchServe has no fallback path; fallbacks are counted by the application in front of it",
		ProcessStart:    "TorchServe's metrics endpoint has no process_start_time_seconds; restarts are detected from counter resets",
		PrefillTime:     "TorchServe " + noPrefillDecode,
		DecodeTime:      "TorchServe " + noPrefillDecode,
		WaitingDeferred: "TorchServe exports no queue length, let alone reasons",
		Rejections:      "TorchServe " + noRejections + " (a full job queue answers 503, among Requests5XX)",
		HTTPErrors:      "TorchServe's HTTP 5xx counter (Requests5XX) is its errors already",
		HTTPRequests:    "TorchServe's HTTP 5xx counter (Requests5XX) is its errors already",
	},
	Signature: []string{"ts_inference_requests_total", "ts_inference_latency_microseconds", "ts_queue_latency_microseconds"},
	Enable: "metrics_mode=prometheus in config.properties (or TS_METRICS_MODE=prometheus): in its default log mode TorchServe " +
		"writes its metrics to ts_metrics.log and its metrics API (port 8082) serves none",
}

const tgiForwardNote = "TGI's tgi_batch_forward_duration{method=\"prefill\"|\"decode\"} times whole batch forward passes, not requests: a request takes one prefill pass and many decode passes shared with others, so it is not a per-request split of compute"

// tgi follows Text Generation Inference's router metrics (histograms in
// seconds, counters without the _total suffix).
var tgi = Profile{
	Name: "tgi", Title: "Text Generation Inference",
	ModelLabel: "", VersionLabel: "", InstanceLabel: "instance",
	LabelNote: "TGI serves one model per process and puts no model or version label on its metrics: the model is known only by the scrape target; add a model label in the scrape configuration (relabelling) and set it as the model label",
	Roles: map[Role][]Measure{
		Requests:    {counter(UnitRequests, "", "tgi_request_count")},
		Errors:      {counter(UnitRequests, "failures by err label (validation, overloaded, generation, …)", "tgi_request_failure")},
		Latency:     {hist("tgi_request_duration", UnitSeconds, "")},
		QueueTime:   {hist("tgi_request_queue_duration", UnitSeconds, "")},
		ComputeTime: {hist("tgi_request_inference_duration", UnitSeconds, "")},
		QueueDepth:  {gauge("tgi_queue_size", 1, UnitRequests, "")},
		Waiting:     {gauge("tgi_queue_size", 1, UnitRequests, "")},
		Running:     {gauge("tgi_batch_current_size", 1, UnitRequests, "requests in the running batch")},
		BatchSize:   {gauge("tgi_batch_current_size", 1, UnitRequests, "")},
		InputLength: {hist("tgi_request_input_length", UnitTokens, "")},
		InterToken:  {hist("tgi_request_mean_time_per_token_duration", UnitSeconds, "mean time per token of each request")},
	},
	Missing: map[Role]string{
		Timeouts:        "TGI has no timeout counter; failures are counted by err label in tgi_request_failure",
		NetworkTime:     "the network segment needs a gateway (or proxy) upstream-time histogram; TGI only measures its own time",
		CacheHits:       "TGI exports no prefix cache metrics",
		CacheQueries:    "TGI exports no prefix cache metrics",
		KVCacheUsage:    "TGI exports no KV cache usage",
		Preemptions:     "TGI exports no preemption count",
		LoadState:       "TGI exports no load-state metric (its router only starts once the shards are ready; readiness is its /health endpoint); warm-up is taken from counter resets and first appearance",
		TimeToFirst:     "TGI exports no time to first token histogram",
		Confidence:      "TGI does not export prediction confidence; it is a business metric the application has to expose",
		Fallback:        "TGI has no fallback path; fallbacks are counted by the application in front of it",
		ProcessStart:    "TGI's metrics endpoint has no process_start_time_seconds; restarts are detected from counter resets",
		GPUUtil:         "TGI exports no GPU utilisation; it comes from the Inferscope probe (or dcgm-exporter)",
		PrefillTime:     tgiForwardNote,
		DecodeTime:      tgiForwardNote,
		WaitingDeferred: "TGI " + noDeferred,
		Rejections:      "TGI counts refused requests in tgi_request_failure (err=\"overloaded\"), read as its errors",
		HTTPErrors:      "TGI " + noHTTP + " (tgi_request_failure)",
		HTTPRequests:    "TGI " + noHTTP + " (tgi_request_failure)",
	},
	Signature: []string{
		"tgi_request_count", "tgi_request_duration_bucket", "tgi_request_queue_duration_bucket",
		"tgi_request_inference_duration_bucket", "tgi_queue_size", "tgi_batch_current_size",
	},
}

// sglangComputeNote explains SGLang's compute time: no execution-time histogram exists, so the
// mean is the end-to-end mean minus the queue mean over the same window.
const sglangComputeNote = "SGLang exports no execution-time histogram: compute is the mean end-to-end time minus the mean queue time " +
	"(rate(sglang:e2e_request_latency_seconds_sum) − rate(sglang:queue_time_seconds_sum), over the finished requests); " +
	"the end-to-end time is the tokenizer manager's, so tokenisation and detokenisation count as compute; a mean, never a percentile"

// sglang follows SGLang's Prometheus metrics (python/sglang/srt/metrics/collector.py, moved to
// srt/observability/metrics_collector.py), served on the HTTP port's /metrics only when the
// server runs with --enable-metrics. Two collectors write them: the tokenizer manager (request
// counters and the e2e / TTFT / inter-token histograms, labels model_name and, in recent
// releases, engine_type) and each scheduler (queue and running gauges, token usage, the queue-time
// histogram, labels model_name, engine_type, tp_rank, pp_rank, moe_ep_rank and dp_rank with data
// parallel attention). Series are summed over those extra labels.
var sglang = Profile{
	Name: "sglang", Title: "SGLang",
	ModelLabel: "model_name", VersionLabel: "", InstanceLabel: "instance",
	LabelNote: "SGLang has no version label (one served model name per server); " +
		"scheduler metrics add engine_type, tp_rank, pp_rank, moe_ep_rank (and dp_rank with data-parallel attention) and are written by " +
		"attention-TP rank 0 only unless --enable-metrics-for-all-schedulers (then each TP rank repeats the same queue: select one tp_rank); " +
		"with priority scheduling the gauges carry priority=\"\" for the total and one series per priority, so the queue and running gauges are read with priority=\"\"",
	Roles: map[Role][]Measure{
		Requests: {counter(UnitRequests, "requests whose output finished, whatever the finish reason", "sglang:num_requests_total")},
		Timeouts: {counter(UnitRequests, "aborted requests: clients that disconnected or gave up, and /abort_request calls; the closest SGLang signal",
			"sglang:num_aborted_requests_total")},
		Latency: {hist("sglang:e2e_request_latency_seconds", UnitSeconds,
			"the tokenizer manager's end-to-end time; default buckets from 0.1 s: shorter requests all fall in the first bucket")},
		QueueTime: {hist("sglang:queue_time_seconds", UnitSeconds, "the scheduler's waiting-queue time (until the request's first forward pass)")},
		ComputeTime: {{Kind: MicrosecondCounter, Metrics: []string{"sglang:e2e_request_latency_seconds_sum"},
			Minus: []string{"sglang:queue_time_seconds_sum"}, Count: []string{"sglang:e2e_request_latency_seconds_count"},
			Scale: 1, Unit: UnitSeconds, Note: sglangComputeNote}},
		QueueDepth: {sglangGauge("sglang:num_queue_reqs", "requests in the waiting queue")},
		Waiting:    {sglangGauge("sglang:num_queue_reqs", "requests in the waiting queue")},
		Running:    {sglangGauge("sglang:num_running_reqs", "")},
		CacheHits: {counter(UnitTokens, "prefix (radix) cache hits, in prompt tokens, every cache_source (device, host, storage) summed",
			"sglang:cached_tokens_total")},
		CacheQueries: {counter(UnitTokens, "prompt tokens (cached ones included): the hit ratio is rate(cached) / rate(prompt), token-weighted; "+
			"the sglang:cache_hit_rate gauge is not read: it is the last prefill batch's share only and is set to 0 at every decode log interval",
			"sglang:prompt_tokens_total")},
		KVCacheUsage: {gauge("sglang:token_usage", 1, UnitRatio,
			"share of the KV-cache token pool in use, 0..1 (recent releases: the fullest of the full-attention, sliding-window and Mamba pools)")},
		Preemptions: {counter(UnitRequests, "retracted requests (SGLang's preemption: decode requests evicted when the KV pool runs out, re-queued), recent releases",
			"sglang:num_retracted_requests_total")},
		BatchSize:   {sglangGauge("sglang:num_running_reqs", "continuous batching: the running requests are the batch")},
		InputLength: {hist("sglang:prompt_tokens_histogram", UnitTokens, "prompt length; older releases export it only with --collect-tokens-histogram")},
		TimeToFirst: {hist("sglang:time_to_first_token_seconds", UnitSeconds, "default buckets from 0.1 s")},
		InterToken: {hist("sglang:inter_token_latency_seconds", UnitSeconds,
			"one observation per generated token: each output chunk's gap is divided by its tokens")},
	},
	Missing: map[Role]string{
		Errors: "SGLang has no failure counter: a failed request ends with finish reason abort and is counted among the finished requests " +
			"(sglang:num_requests_total); aborts by clients are read as timeouts",
		NetworkTime: "the network segment needs a gateway (or proxy) upstream-time histogram; SGLang only measures its own time",
		LoadState: "SGLang exports no load-state metric (its /metrics endpoint only answers once the engine is up; readiness is /health); " +
			"warm-up is taken from counter resets and first appearance",
		Confidence: "SGLang does not export prediction confidence; it is a business metric the application has to expose",
		Fallback:   "SGLang has no fallback path; fallbacks are counted by the application in front of it",
		ProcessStart: "SGLang serves its metrics in prometheus_client's multiprocess mode, which exports no process_start_time_seconds; " +
			"restarts are detected from counter resets",
		GPUUtil: "SGLang exports no GPU utilisation (sglang:utilization is the scheduler's load against its SLO limit); " +
			"it comes from the Inferscope probe (or dcgm-exporter)",
		PrefillTime:     "the SGLang metrics this profile reads have no per-request prefill/decode split (time to first token covers queue and prefill)",
		DecodeTime:      "the SGLang metrics this profile reads have no per-request prefill/decode split (time to first token covers queue and prefill)",
		WaitingDeferred: "SGLang " + noDeferred,
		Rejections:      "SGLang " + noRejections,
		HTTPErrors:      "SGLang exports no HTTP status counter of its own",
		HTTPRequests:    "SGLang exports no HTTP status counter of its own",
	},
	Signature: []string{
		"sglang:num_requests_total", "sglang:e2e_request_latency_seconds_bucket", "sglang:time_to_first_token_seconds_bucket",
		"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage", "sglang:prompt_tokens_total",
		"sglang:queue_time_seconds_bucket",
	},
	Enable: "--enable-metrics: without it SGLang serves no /metrics",
}

// sglangGauge reads a scheduler gauge's total: with priority scheduling the total is the series
// with priority="" (which also matches series without the label) and the others break it down.
func sglangGauge(name, note string) Measure {
	m := gauge(name, 1, UnitRequests, note)
	m.Matchers = map[string]string{"priority": ""}
	return m
}
