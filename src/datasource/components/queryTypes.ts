import type { QueryType } from '../types';

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

const MVI: QueryTypeSpec['filters'] = ['model', 'version', 'instance'];
const GPU: QueryTypeSpec['filters'] = ['instance', 'gpu'];

/** Every query type the backend serves, in picker order. */
export const QUERY_TYPES: QueryTypeSpec[] = [
  {
    value: 'latency',
    label: 'Latency',
    description: 'Latency quantiles (P50/P95/P99) per model and version, from the latency histogram.',
    filters: MVI,
    options: [
      {
        key: 'quantiles',
        label: 'Quantiles',
        kind: 'numbers',
        placeholder: '0.5, 0.95, 0.99',
        description: 'Comma-separated, each in (0, 1)',
      },
    ],
  },
  {
    value: 'split',
    label: 'Split',
    description: 'Queue, compute and network time per model/version, their shares and the dominant segment (regime).',
    filters: MVI,
    options: [],
  },
  {
    value: 'jitter',
    label: 'Jitter',
    description: 'P99 / P50 per model/version; above the threshold line the tail is detached from the median.',
    filters: MVI,
    options: [
      {
        key: 'threshold',
        label: 'Threshold',
        kind: 'number',
        placeholder: '5',
        description: 'Ratio drawn as the alert line',
      },
    ],
  },
  {
    value: 'baseline',
    label: 'Baseline',
    description:
      'Current latency quantile against the same time of day on previous days: mean, std, ratio, z-score, status.',
    filters: MVI,
    options: [
      {
        key: 'quantile',
        label: 'Quantile',
        kind: 'number',
        placeholder: '0.95',
        description: 'Latency quantile compared',
      },
      { key: 'days', label: 'Days', kind: 'number', placeholder: '7', description: 'Previous days averaged (1-28)' },
      { key: 'window', label: 'Window', kind: 'duration', placeholder: '10m', description: 'Rate window of each day' },
      {
        key: 'ratioWarn',
        label: 'Warn ratio',
        kind: 'number',
        placeholder: '1.5',
        description: 'Ratio for a P1 candidate',
      },
      { key: 'ratioCrit', label: 'Critical ratio', kind: 'number', placeholder: '3', description: 'Ratio for P0' },
      { key: 'for', label: 'For', kind: 'duration', placeholder: '3m', description: 'How long the ratio must hold' },
    ],
  },
  {
    value: 'throughput',
    label: 'Throughput',
    description: 'Requests per second, summed as chosen.',
    filters: MVI,
    options: [
      {
        key: 'by',
        label: 'By',
        kind: 'choice',
        placeholder: 'model',
        description: 'Grouping',
        choices: ['total', 'model', 'version', 'instance'],
      },
    ],
  },
  {
    value: 'errors',
    label: 'Errors',
    description: 'Error ratio and timeout ratio per model/version.',
    filters: MVI,
    options: [],
  },
  {
    value: 'gpu',
    label: 'GPU',
    description: 'Per-GPU utilisation, memory used (85 % / 92 % lines), temperature and power from Prometheus.',
    filters: GPU,
    options: [
      {
        key: 'metrics',
        label: 'Metrics',
        kind: 'multichoice',
        placeholder: 'all',
        description: 'Measurements to return',
        choices: ['util', 'memory', 'temperature', 'power'],
      },
    ],
  },
  {
    value: 'gpumem_forecast',
    label: 'GPU memory forecast',
    description: 'Seconds until each GPU’s memory reaches the threshold, from its recent trend.',
    filters: GPU,
    options: [
      {
        key: 'threshold',
        label: 'Threshold',
        kind: 'number',
        placeholder: '0.92',
        description: 'Memory-used ratio to predict',
      },
      { key: 'window', label: 'Window', kind: 'duration', placeholder: '30m', description: 'Trend window' },
    ],
  },
  {
    value: 'gpu_idle_under_traffic',
    label: 'GPU idle under traffic',
    description: '1 when a GPU sits at zero utilisation while its node serves traffic and its models are ready.',
    filters: ['model', 'instance', 'gpu'],
    options: [
      {
        key: 'idleFor',
        label: 'Idle for',
        kind: 'duration',
        placeholder: '10m',
        description: 'How long utilisation must stay zero',
      },
      {
        key: 'qpsFraction',
        label: 'QPS fraction',
        kind: 'number',
        placeholder: '0.5',
        description: 'Share of the QPS baseline the node must exceed',
      },
    ],
  },
  {
    value: 'gpu_live',
    label: 'GPU live',
    description: 'A table of every GPU as the probes see it now: state, memory, temperature, power, processes.',
    filters: GPU,
    options: [],
  },
  {
    value: 'promql',
    label: 'PromQL',
    description: 'A raw PromQL expression, passed through to Prometheus',
    filters: [],
    options: [],
  },
];

export function queryTypeSpec(value: QueryType | undefined): QueryTypeSpec {
  return QUERY_TYPES.find((t) => t.value === (value ?? 'promql')) ?? QUERY_TYPES[QUERY_TYPES.length - 1];
}
