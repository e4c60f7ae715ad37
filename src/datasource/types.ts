import { DataSourceJsonData } from '@grafana/data';
import { DataQuery } from '@grafana/schema';

import { DEFAULT_QUERY_TYPE, QueryType } from './queryTypes.gen';

/**
 * Query types are part of the public contract: dashboards and alert rules store them, so a
 * name is never renamed. The list is generated from the engine's registry (queryTypes.gen.ts).
 */
export type { QueryType };

export interface InferscopeQuery extends DataQuery {
  queryType?: QueryType;

  // promql
  /** PromQL expression (queryType promql). */
  expr?: string;
  /** Series name template, e.g. "{{model_name}} p99". */
  legendFormat?: string;

  // Common to the engine's query types. Empty = no filter. A multi-value template
  // variable becomes its values joined with "|" (Grafana's "pipe" format, unescaped);
  // the backend reads "a|b" as the set of the literal names a and b, each matched exactly
  // (engine.SplitValues, the one reading everywhere), and escapes each one itself.
  model?: string;
  version?: string;
  instance?: string;
  gpu?: string;
  /** Drop samples from instances that are not ready or still inside the warm-up window. */
  warmupFilter?: boolean;
}

export const DEFAULT_QUERY: Partial<InferscopeQuery> = {
  queryType: DEFAULT_QUERY_TYPE,
  expr: '',
  legendFormat: '',
};

export type MetricProfile = 'auto' | 'custom' | 'vllm' | 'triton' | 'torchserve' | 'tgi' | 'sglang';

export const METRIC_PROFILES: Array<{ value: MetricProfile; label: string; description: string }> = [
  {
    value: 'auto',
    label: 'Auto-detect',
    description: 'Recognise the inference server from the metric names Prometheus has',
  },
  { value: 'custom', label: 'Custom', description: 'inference_requests_total, inference_latency_seconds, …' },
  { value: 'vllm', label: 'vLLM', description: 'vllm:e2e_request_latency_seconds, vllm:num_requests_running, …' },
  { value: 'triton', label: 'Triton', description: 'nv_inference_request_duration_us and other µs counters' },
  {
    value: 'torchserve',
    label: 'TorchServe',
    description: 'ts_inference_latency_microseconds, ts_queue_latency_microseconds (needs metrics_mode=prometheus)',
  },
  { value: 'tgi', label: 'TGI', description: 'tgi_request_duration, tgi_request_queue_duration, …' },
  {
    value: 'sglang',
    label: 'SGLang',
    description: 'sglang:e2e_request_latency_seconds, sglang:num_queue_reqs, … (needs --enable-metrics)',
  },
];

export const DEFAULT_WARMUP_WINDOW = '2m';
export const DEFAULT_PROFILE: MetricProfile = 'auto';

/** The gateway in front of the servers, whose upstream time gives the network segment. */
export type GatewayPreset = 'none' | 'ingress-nginx' | 'envoy' | 'istio' | 'custom';

export const GATEWAY_PRESETS: Array<{ value: GatewayPreset; label: string; description: string }> = [
  { value: 'none', label: 'None', description: 'No gateway: the network segment is not measured' },
  {
    value: 'ingress-nginx',
    label: 'ingress-nginx',
    description: 'nginx_ingress_controller_response_duration_seconds; the model from the service label',
  },
  {
    value: 'envoy',
    label: 'Envoy',
    description: 'envoy_cluster_upstream_rq_time (ms); the model from envoy_cluster_name',
  },
  {
    value: 'istio',
    label: 'Istio',
    description: 'istio_request_duration_milliseconds, reporter="source"; the model from destination_workload',
  },
  { value: 'custom', label: 'Custom histogram', description: 'A histogram you name, with its unit and labels' },
];

/** The preset's default model label, shown as the placeholder. */
export const GATEWAY_MODEL_LABELS: Record<GatewayPreset, string> = {
  none: '',
  'ingress-nginx': 'service',
  envoy: 'envoy_cluster_name',
  istio: 'destination_workload',
  custom: '',
};

/** jsonData.gateway; the backend validates it (pkg/gateway). */
export interface GatewayOptions {
  preset?: GatewayPreset;
  /** The upstream-time histogram's base name (required for custom). */
  metric?: string;
  /** seconds, milliseconds or microseconds; empty = the preset's. */
  unit?: string;
  /** Fixed label matchers, e.g. {"reporter": "source"}. */
  matchers?: Record<string, string>;
  /** The gateway label naming the model, an anchored regex on its value and the replacement ($1). */
  modelLabel?: string;
  modelRegex?: string;
  modelReplacement?: string;
  /** Static map of the label's values to models, tried before the regex. */
  modelMap?: Record<string, string>;
  versionLabel?: string;
  versionRegex?: string;
  instanceLabel?: string;
  instanceRegex?: string;
}

/** jsonData of the data source. The HTTP fields follow Grafana's standard names. */
export interface InferscopeOptions extends DataSourceJsonData {
  // Standard HTTP settings for Prometheus (url, basicAuth, basicAuthUser live on the settings object).
  tlsSkipVerify?: boolean;
  tlsAuthWithCACert?: boolean;
  tlsAuth?: boolean;
  serverName?: string;
  /** Seconds. */
  timeout?: number;
  keepCookies?: string[];
  oauthPassThru?: boolean;
  httpHeaderName1?: string;
  // Further custom headers are httpHeaderName2, httpHeaderName3, …
  [httpHeaderName: `httpHeaderName${number}`]: string | undefined;

  // Inferscope's own.
  /** Base URLs of inferscope-probe instances, e.g. http://gpu-node-1:9835. */
  probeUrls?: string[];
  /** Go/Prometheus duration, e.g. "2m" or "90s". */
  warmupWindow?: string;
  profile?: MetricProfile;
  /** Label names overriding the profile's own; empty = the profile's. */
  modelLabel?: string;
  versionLabel?: string;
  instanceLabel?: string;
  /** The gateway whose upstream time gives the network segment of split and triage. */
  gateway?: GatewayOptions;
  /** The probes' own credentials (their --web.config.file), never Prometheus'. */
  probeBasicAuthUser?: string;
  probeTlsSkipVerify?: boolean;
  probeTlsServerName?: string;
  /** Thanos querier parameters (dedup, partial_response); unset = the querier's defaults. */
  thanosDedup?: boolean;
  thanosPartialResponse?: boolean;
}

/** Values sent to the backend once and never returned to the browser. */
export interface InferscopeSecureJsonData {
  basicAuthPassword?: string;
  tlsCACert?: string;
  tlsClientCert?: string;
  tlsClientKey?: string;
  /** With httpHeaderName1 "Authorization": "Bearer <token>". */
  httpHeaderValue1?: string;
  [httpHeaderValue: `httpHeaderValue${number}`]: string | undefined;
  probeBasicAuthPassword?: string;
  probeBearerToken?: string;
  probeTlsCACert?: string;
  probeTlsClientCert?: string;
  probeTlsClientKey?: string;
}
