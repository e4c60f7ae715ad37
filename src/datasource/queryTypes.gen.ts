// Code generated from the engine's query-type registry (pkg/engine); DO NOT EDIT.
// Regenerate with: go generate ./pkg/engine/specgen

/** Every query type the backend serves, in picker order (names are a public contract). */
export const QUERY_TYPE_NAMES = [
  "latency",
  "split",
  "jitter",
  "baseline",
  "throughput",
  "errors",
  "gpu",
  "gpumem_forecast",
  "gpu_idle_under_traffic",
  "gpu_live",
  "promql",
] as const;

export type QueryType = (typeof QUERY_TYPE_NAMES)[number];

/** The type of a query that names none. */
export const DEFAULT_QUERY_TYPE: QueryType = "promql";

/** One type-specific option of a query type, as the backend reads it (docs/queries*.md). */
export interface OptionSpec {
  key: string;
  label: string;
  kind: 'number' | 'numbers' | 'duration' | 'choice' | 'multichoice';
  /** The backend's default, shown as the placeholder. */
  placeholder: string;
  description: string;
  choices?: string[];
}

export interface QueryTypeSpec {
  value: QueryType;
  label: string;
  /** What the series mean, in one sentence. */
  description: string;
  /** Which selection fields apply. */
  filters: Array<'model' | 'version' | 'instance' | 'gpu'>;
  options: OptionSpec[];
}

export const GENERATED_QUERY_TYPES: QueryTypeSpec[] = [
  {
    value: "latency",
    label: "Latency",
    description: "Latency quantiles (P50/P95/P99) per model and version, from the latency histogram.",
    filters: ["model", "version", "instance"],
    options: [
      {
        key: "quantiles",
        label: "Quantiles",
        kind: "numbers",
        placeholder: "0.5, 0.95, 0.99",
        description: "Latency quantiles, comma-separated in the editor.",
      },
      {
        key: "by",
        label: "By",
        kind: "choice",
        placeholder: "version",
        description: "`version`: one series per model version, the instances read together; `instance`: one per model version and instance, so a problem on one instance is not averaged over the others (the alert rules query this way).",
        choices: ["version", "instance"],
      },
    ],
  },
  {
    value: "split",
    label: "Split",
    description: "Queue, compute and network time per model/version, their shares and the dominant segment (regime); compute's prefill and decode phases where the server times them.",
    filters: ["model", "version", "instance"],
    options: [
      {
        key: "baselineWindow",
        label: "Baseline window",
        kind: "duration",
        placeholder: "1h",
        description: "How far back each segment's own baseline reaches.",
      },
      {
        key: "by",
        label: "By",
        kind: "choice",
        placeholder: "version",
        description: "`version`: one series per model version, the instances read together; `instance`: one per model version and instance, so a problem on one instance is not averaged over the others (the alert rules query this way).",
        choices: ["version", "instance"],
      },
    ],
  },
  {
    value: "jitter",
    label: "Jitter",
    description: "P99 / P50 per model/version; above the threshold line the tail is detached from the median.",
    filters: ["model", "version", "instance"],
    options: [
      {
        key: "threshold",
        label: "Threshold",
        kind: "number",
        placeholder: "5",
        description: "Ratio drawn as the alert line.",
      },
      {
        key: "by",
        label: "By",
        kind: "choice",
        placeholder: "version",
        description: "`version`: one series per model version, the instances read together; `instance`: one per model version and instance, so a problem on one instance is not averaged over the others (the alert rules query this way).",
        choices: ["version", "instance"],
      },
    ],
  },
  {
    value: "baseline",
    label: "Baseline",
    description: "Current latency quantile (the mean where the server has no percentiles) against the same time of day on previous days: mean, std, ratio, z-score, status; labelled measure (p95 or mean) and reference (version, or model for a version with fewer than minDays days of its own).",
    filters: ["model", "version", "instance"],
    options: [
      {
        key: "quantile",
        label: "Quantile",
        kind: "number",
        placeholder: "0.95",
        description: "The latency quantile compared.",
      },
      {
        key: "days",
        label: "Days",
        kind: "number",
        placeholder: "7",
        description: "Previous days averaged.",
      },
      {
        key: "window",
        label: "Window",
        kind: "duration",
        placeholder: "10m",
        description: "Half-width of the same-time-of-day window.",
      },
      {
        key: "ratioWarn",
        label: "Warn ratio",
        kind: "number",
        placeholder: "1.5",
        description: "A P1 candidate above this ratio …",
      },
      {
        key: "for",
        label: "For",
        kind: "duration",
        placeholder: "3m",
        description: "… held at every point for this long.",
      },
      {
        key: "ratioCrit",
        label: "Critical ratio",
        kind: "number",
        placeholder: "3",
        description: "P0 above this ratio, at once.",
      },
      {
        key: "minDays",
        label: "Min days",
        kind: "number",
        placeholder: "3",
        description: "Days with data needed to judge a point; a version with fewer is judged against its model's baseline (reference=model).",
      },
      {
        key: "by",
        label: "By",
        kind: "choice",
        placeholder: "version",
        description: "`version`: one series per model version, the instances read together; `instance`: one per model version and instance, so a problem on one instance is not averaged over the others (the alert rules query this way).",
        choices: ["version", "instance"],
      },
    ],
  },
  {
    value: "throughput",
    label: "Throughput",
    description: "Requests per second, summed as chosen.",
    filters: ["model", "version", "instance"],
    options: [
      {
        key: "by",
        label: "By",
        kind: "choice",
        placeholder: "model",
        description: "Grouping of the request rate.",
        choices: ["total", "model", "version", "instance"],
      },
    ],
  },
  {
    value: "errors",
    label: "Errors",
    description: "Error ratio and timeout ratio per model/version; admission rejections and HTTP 5xx where the server counts them.",
    filters: ["model", "version", "instance"],
    options: [
      {
        key: "by",
        label: "By",
        kind: "choice",
        placeholder: "version",
        description: "`version`: one series per model version, the instances read together; `instance`: one per model version and instance, so a problem on one instance is not averaged over the others (the alert rules query this way).",
        choices: ["version", "instance"],
      },
    ],
  },
  {
    value: "gpu",
    label: "GPU",
    description: "Per-GPU utilisation, memory used (85 % / 92 % lines), temperature and power from Prometheus.",
    filters: ["instance", "gpu"],
    options: [
      {
        key: "metrics",
        label: "Metrics",
        kind: "multichoice",
        placeholder: "all",
        description: "Which measurements; also the series names.",
        choices: ["util", "memory", "temperature", "power"],
      },
    ],
  },
  {
    value: "gpumem_forecast",
    label: "GPU memory forecast",
    description: "Seconds until each GPU’s memory reaches the threshold, from its recent trend.",
    filters: ["instance", "gpu"],
    options: [
      {
        key: "threshold",
        label: "Threshold",
        kind: "number",
        placeholder: "0.92",
        description: "Memory-used ratio to predict.",
      },
      {
        key: "window",
        label: "Window",
        kind: "duration",
        placeholder: "30m",
        description: "Trend window.",
      },
    ],
  },
  {
    value: "gpu_idle_under_traffic",
    label: "GPU idle under traffic",
    description: "1 when a GPU sits at zero utilisation while its node serves traffic and its models are ready.",
    filters: ["model", "instance", "gpu"],
    options: [
      {
        key: "idleFor",
        label: "Idle for",
        kind: "duration",
        placeholder: "10m",
        description: "How long utilisation must stay at zero (≤ 0.5 %).",
      },
      {
        key: "qpsFraction",
        label: "QPS fraction",
        kind: "number",
        placeholder: "0.5",
        description: "Share of the QPS baseline the node must exceed.",
      },
    ],
  },
  {
    value: "gpu_live",
    label: "GPU live",
    description: "A table of every GPU as the probes see it now: state, memory, temperature, power, processes.",
    filters: ["instance", "gpu"],
    options: [],
  },
  {
    value: "promql",
    label: "PromQL",
    description: "A raw PromQL expression, passed through to Prometheus.",
    filters: [],
    options: [],
  },
];
