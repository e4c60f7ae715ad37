import { ParamValues, Severity } from './alerting';
import { failureWithStatus, fetchResource, isObject, ResourceRequestError, resourceUrl } from './resource';

/**
 * Client of the data source's `backtest` resource: each catalog rule evaluated over history
 * as the alerting engine would, answered with when and how long it would have fired.
 */

export interface BacktestInterval {
  kind: 'warmup' | 'deploy' | string;
  instance: string;
  model?: string;
  version?: string;
  start: string;
  end: string;
}

export interface BacktestEpisode {
  labels: Record<string, string>;
  /** When it started firing (after `for`). */
  start: string;
  /** When it resolved, or the range's end when `open`. */
  end: string;
  open: boolean;
  seconds: number;
  peak: number | null;
  /** Warm-ups and deploys that intersect the episode. */
  overlaps: BacktestInterval[];
}

export interface BacktestRule {
  id: string;
  alert: string;
  title: string;
  severity: Severity;
  for: string;
  /** Why the metric profile cannot feed this rule; empty when it can. */
  unavailable: string;
  /** Why this rule could not be backtested; empty when it was. */
  error: string;
  fired: number;
  firingSeconds: number;
  evaluations: number;
  episodes: BacktestEpisode[];
}

export interface BacktestAnswer {
  from: string;
  to: string;
  interval: string;
  rules: BacktestRule[];
  warmups: BacktestInterval[];
  deploys: BacktestInterval[];
  queries: number;
  seconds: number;
  notices?: string[];
}

export interface BacktestRequest {
  params: ParamValues;
  /** RFC 3339 or Unix seconds. */
  from: string;
  to: string;
  /** Catalog ids; absent = all. */
  rules?: string[];
}

export function backtestUrl(uid: string): string {
  return resourceUrl(uid, 'backtest');
}

/** The backtest could not be run: `status` 400 is bad input, 502 Prometheus, absent no answer. */
export class BacktestRequestError extends ResourceRequestError {
  name = 'BacktestRequestError';
}

export async function runBacktest(uid: string, req: BacktestRequest): Promise<BacktestAnswer> {
  const data = await fetchResource(
    uid,
    'backtest',
    { method: 'POST', body: req, describe: failureWithStatus },
    BacktestRequestError
  );
  return parseBacktest(data);
}

/** Checks the answer's shape so that a malformed reply is an error, not a broken page. */
export function parseBacktest(data: unknown): BacktestAnswer {
  if (!isObject(data) || !Array.isArray(data.rules) || typeof data.from !== 'string' || typeof data.to !== 'string') {
    throw new BacktestRequestError('the data source answered with an unexpected backtest document');
  }
  const rules = (data.rules as unknown[]).filter(isObject).map((r) => ({
    ...r,
    unavailable: typeof r.unavailable === 'string' ? r.unavailable : '',
    error: typeof r.error === 'string' ? r.error : '',
    episodes: (Array.isArray(r.episodes) ? r.episodes : []).filter(isObject).map((e) => ({
      ...e,
      labels: isObject(e.labels) ? e.labels : {},
      overlaps: Array.isArray(e.overlaps) ? e.overlaps : [],
    })),
  }));
  return {
    ...data,
    rules,
    warmups: Array.isArray(data.warmups) ? data.warmups : [],
    deploys: Array.isArray(data.deploys) ? data.deploys : [],
  } as unknown as BacktestAnswer;
}
