import { dateMath } from '@grafana/data';

import { fetchResource, isObject, ResourceRequestError, resourceUrl } from './resource';

/**
 * Client of the data source's `triage` resource: the brief's five-step triage path run as
 * queries for one model (and optionally version and instance) over a window, answered with a
 * ranked diagnosis. A GPU alert asks by node (and GPU) instead: every model served on the node
 * is triaged and the causes come back in one ranked list, each naming its model.
 */

export type TriageVerdict = 'diagnosed' | 'no_direction' | 'healthy';

export type CauseId =
  | 'traffic_surge'
  | 'queue'
  | 'compute_memory'
  | 'gpu_idle'
  | 'framework'
  | 'input_shift'
  | 'network'
  | 'hardware'
  | 'warmup'
  | 'model_regression'
  /** The compute segment slowed and no measured signal explains it (a diagnosis of the segment). */
  | 'compute'
  /** KV-cache exhaustion: usage near full with requests preempted. */
  | 'kv_cache';

export interface TriageWindow {
  start: string;
  end: string;
  duration: string;
}

export interface TriageEvidence {
  what: string;
  /** A Grafana unit id (percentunit, s, reqps, bytes …). */
  unit: string;
  before: number | null;
  now: number | null;
  /** now / before − 1. */
  change: number | null;
  note?: string;
}

export interface TriageLink {
  title: string;
  row?: string;
  panelId?: number;
  /** A Grafana URL relative to its root (/d/<uid>/?…). */
  url: string;
}

export interface TriageCause {
  id: CauseId | string;
  title: string;
  layer: string;
  /** In [0, 1], best first. */
  score: number;
  confidence: string;
  summary: string;
  /** The model the cause was found on (a node's answer holds several models). */
  model?: string;
  /** Where the cause sits when narrower than the request. */
  instance?: string;
  version?: string;
  evidence: TriageEvidence[];
  next: string;
  links: TriageLink[];
  /** The change point the cause was found in (a window longer than an hour). */
  window?: TriageWindow;
}

/** One segment's part of the latency change of the subject that changed most. */
export interface TriageSegment {
  /** queue, compute, prefill, decode, network, overhead. */
  segment: string;
  /** The segment this one is part of (compute for prefill and decode). */
  parent?: string;
  /** Mean seconds per request; null where not measured. */
  before: number | null;
  now: number | null;
  /** now − before, seconds. */
  change: number | null;
  /** Share of the total change; null when the total did not grow. */
  share: number | null;
  note?: string;
}

/** A change point of a long window, triaged on its own. */
export interface TriageEpisode {
  window: TriageWindow;
  peak: number;
  where: string;
  verdict: TriageVerdict;
  summary: string;
  lead?: string;
  confidence: string;
  causes: TriageCause[];
}

export interface TriageStep {
  step: number;
  title: string;
  minutes: string;
  finding: string;
  causes: string[];
}

export interface TriageAnswer {
  /** Empty for a node question. */
  model: string;
  version: string;
  instance: string;
  /** The node (and GPU) of a node question, and the models triaged there. */
  node?: string;
  gpu?: string;
  models?: string[];
  window: TriageWindow;
  before: TriageWindow;
  verdict: TriageVerdict;
  summary: string;
  causes: TriageCause[];
  steps: TriageStep[];
  notices?: string[];
  /** How sure the verdict is: high, medium or low. */
  confidence?: string;
  /** The latency change decomposed; `lead` is the segment that explains it. */
  segments?: TriageSegment[];
  lead?: string;
  segmentsOf?: string;
  /** The signals the triage could not read, each with what it would have told. */
  notMeasured?: string[];
  /** The change points of a window longer than an hour. */
  episodes?: TriageEpisode[];
  /** The change point inside a short window: `window` is then the part after it. */
  change?: TriageRecentChange;
}

/** Where the subject's time per request (or its P95) stepped up inside the window asked about. */
export interface TriageRecentChange {
  at: string;
  /** The subject that changed (model version on instance). */
  where: string;
  /** The series before and after, in seconds: the time per request, or the P95 where `signal` says so. */
  level: number;
  now: number;
  /** "P95" when the change was seen in the P95 and not in the time per request. */
  signal?: string;
  /** The window asked about, and the share of it the compared part covers (0-1). */
  asked: TriageWindow;
  covers: number;
  /** Points past the line. */
  points: number;
  /** The readings after the change took each rate over its last scrape interval (irate), not over the rate window. */
  lastInterval?: boolean;
}

/** A model, or a node (a GPU alert's question), or both: the model on that node only. */
export interface TriageRequest {
  model?: string;
  version?: string;
  instance?: string;
  node?: string;
  /** The GPU (its index on the node) the GPU readings are about. */
  gpu?: string;
  /** RFC 3339 (UTC, whole seconds). */
  from: string;
  to: string;
}

export function triageUrl(uid: string): string {
  return resourceUrl(uid, 'triage');
}

/** The triage could not be had: `status` 400 is bad input, 502 Prometheus, absent no answer. */
export class TriageRequestError extends ResourceRequestError {
  name = 'TriageRequestError';
}

export async function fetchTriage(uid: string, req: TriageRequest): Promise<TriageAnswer> {
  const params: Record<string, string> = {};
  for (const key of ['model', 'version', 'instance', 'node', 'gpu'] as const) {
    const v = req[key];
    if (v) {
      params[key] = v;
    }
  }
  params.from = req.from;
  params.to = req.to;
  const data = await fetchResource(uid, 'triage', { params }, TriageRequestError);
  return parseTriage(data);
}

/** Checks the answer's shape so that a malformed reply is an error, not a broken page. */
export function parseTriage(data: unknown): TriageAnswer {
  // Lists may come as null (Go's empty slices); anything else that is not a list is malformed.
  const list = (v: unknown) => v === null || v === undefined || Array.isArray(v);
  if (
    !isObject(data) ||
    typeof data.verdict !== 'string' ||
    !list(data.causes) ||
    !list(data.steps) ||
    !isObject(data.window)
  ) {
    throw new TriageRequestError('the data source answered with an unexpected triage document');
  }
  const causes = ((data.causes ?? []) as unknown[]).filter(isObject).map((c) => ({
    ...c,
    evidence: Array.isArray(c.evidence) ? c.evidence : [],
    links: Array.isArray(c.links) ? c.links : [],
  }));
  const steps = ((data.steps ?? []) as unknown[]).filter(isObject).map((s) => ({
    ...s,
    causes: Array.isArray(s.causes) ? s.causes : [],
  }));
  const before = isObject(data.before) ? data.before : { start: '', end: '', duration: '' };
  const segments = Array.isArray(data.segments) ? data.segments.filter(isObject) : [];
  const notMeasured = Array.isArray(data.notMeasured) ? data.notMeasured.filter((x) => typeof x === 'string') : [];
  const episodes = Array.isArray(data.episodes) ? data.episodes.filter(isObject) : [];
  // A change point with an unreadable shape is dropped rather than shown half.
  const c = data.change;
  const change =
    isObject(c) &&
    typeof c.at === 'string' &&
    typeof c.level === 'number' &&
    typeof c.now === 'number' &&
    (c.signal === undefined || typeof c.signal === 'string') &&
    isObject(c.asked)
      ? c
      : undefined;
  return { ...data, before, causes, steps, segments, notMeasured, episodes, change } as unknown as TriageAnswer;
}

/**
 * Reads a time as alert links and people write it: milliseconds since the epoch (what Grafana's
 * own links carry), Unix seconds, RFC 3339, or Grafana's relative `now`, `now-15m`, `now-1d/d`.
 * Returns undefined for anything else.
 */
export function parseTimeParam(text: string, roundUp = false, now?: Date): Date | undefined {
  const s = text.trim();
  if (s === '') {
    return undefined;
  }
  if (/^\d+(\.\d+)?$/.test(s)) {
    const n = Number(s);
    // 1e11 ms is March 1973, 1e11 s the year 5138: whichever reads as a plausible time.
    const ms = n >= 1e11 ? n : n * 1000;
    return new Date(ms);
  }
  if (s.startsWith('now')) {
    const d = dateMath.toDateTime(s, { roundUp, timezone: 'utc', now });
    return d && d.isValid() ? new Date(d.valueOf()) : undefined;
  }
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(s)) {
    const d = new Date(s);
    return isNaN(d.getTime()) ? undefined : d;
  }
  return undefined;
}

/** RFC 3339 in UTC with whole seconds, as the resources read times. */
export function toRFC3339(d: Date): string {
  return new Date(Math.floor(d.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
