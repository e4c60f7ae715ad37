import { fetchResource, isObject, ResourceRequestError, resourceUrl } from './resource';

/**
 * Client of the data source's `gate` resource (pkg/gate): a canary version compared with the
 * current one over a window, answered pass, fail or insufficient data (docs/gate.md).
 */

export type GateVerdict = 'pass' | 'fail' | 'insufficient_data';

export interface GateCheck {
  name: string;
  unit: string;
  baseline: number | null;
  canary: number | null;
  /** canary / baseline − 1. */
  change: number | null;
  threshold: number | null;
  /** null for skipped and informational checks. */
  passed: boolean | null;
  reason: string;
  insufficient?: boolean;
}

export interface GateReport {
  verdict: GateVerdict;
  reason: string;
  checks: GateCheck[];
  window: { start: string; end: string; duration: string };
  model: string;
  baseline: string;
  canary: string;
  notices?: string[];
}

export interface GateRequest {
  model: string;
  baseline: string;
  canary: string;
  /** Prometheus duration (2h). */
  window: string;
  /** Fraction (0.1) or percentage (10%). */
  latencyThreshold: string;
  memoryThreshold: string;
}

export const GATE_DEFAULTS = { window: '2h', latencyThreshold: '10%', memoryThreshold: '5%' };

export function gateUrl(uid: string): string {
  return resourceUrl(uid, 'gate');
}

/**
 * The query a deployment tool sends. The page asks with statusCodes=false, so that a fail is an
 * answer (200 with the verdict) and not an error; `statusCodes` true gives 412 on fail and 409 on
 * insufficient data, for tools that decide on the HTTP status (Flagger).
 */
export function gateQuery(req: GateRequest, statusCodes: boolean): Record<string, string> {
  const q: Record<string, string> = {
    model: req.model,
    baseline: req.baseline,
    canary: req.canary,
    window: req.window || GATE_DEFAULTS.window,
    latencyThreshold: req.latencyThreshold || GATE_DEFAULTS.latencyThreshold,
    memoryThreshold: req.memoryThreshold || GATE_DEFAULTS.memoryThreshold,
  };
  if (!statusCodes) {
    q.statusCodes = 'false';
  }
  return q;
}

/** The full address of the resource for a pipeline, under `grafanaUrl` (ending with or without /). */
export function pipelineUrl(grafanaUrl: string, uid: string, req: GateRequest, statusCodes: boolean): string {
  const base = grafanaUrl.replace(/\/+$/, '');
  return `${base}${gateUrl(uid)}?${new URLSearchParams(gateQuery(req, statusCodes)).toString()}`;
}

/** The gate could not be evaluated: `status` 400 is bad input, 401 credentials, 502 Prometheus. */
export class GateRequestError extends ResourceRequestError {
  name = 'GateRequestError';
}

export async function fetchGate(uid: string, req: GateRequest): Promise<GateReport> {
  const data = await fetchResource(uid, 'gate', { params: gateQuery(req, false) }, GateRequestError);
  return parseGate(data);
}

const VERDICTS: GateVerdict[] = ['pass', 'fail', 'insufficient_data'];

/** Checks the answer's shape so that a malformed reply is an error, not a broken page. */
export function parseGate(data: unknown): GateReport {
  if (
    !isObject(data) ||
    !VERDICTS.includes(data.verdict as GateVerdict) ||
    !Array.isArray(data.checks) ||
    !isObject(data.window)
  ) {
    throw new GateRequestError('the data source answered with an unexpected gate report');
  }
  return data as unknown as GateReport;
}
