import { lastValueFrom } from 'rxjs';
import { FetchError, getBackendSrv, isFetchError } from '@grafana/runtime';

/** Shape of GET /api/datasources/uid/<uid>/resources/setup, served by the Go data source. */
export interface SetupStatus {
  prometheus: PrometheusStatus;
  profile: ProfileStatus;
  probes: ProbeStatus[];
  warmupWindow: string;
}

export interface PrometheusStatus {
  url: string;
  ok: boolean;
  version?: string;
  error?: string;
}

export interface ProfileStatus {
  /** custom | vllm | triton | torchserve | tgi; empty when nothing was recognised. */
  name: string;
  /** true when the name came from the metric names Prometheus has, false when set by hand. */
  detected: boolean;
}

export interface ProbeStatus {
  url: string;
  ok: boolean;
  gpus?: number;
  error?: string;
}

export function setupUrl(uid: string): string {
  return `/api/datasources/uid/${encodeURIComponent(uid)}/resources/setup`;
}

/** Thrown when the data source's backend does not answer with a usable setup document. */
export class SetupRequestError extends Error {
  constructor(
    message: string,
    readonly status?: number
  ) {
    super(message);
    this.name = 'SetupRequestError';
  }
}

export async function fetchSetup(uid: string): Promise<SetupStatus> {
  let data: unknown;
  try {
    const response = await lastValueFrom(
      getBackendSrv().fetch<unknown>({ url: setupUrl(uid), method: 'GET', showErrorAlert: false })
    );
    data = response.data;
  } catch (err) {
    throw toSetupRequestError(err);
  }
  return parseSetup(data);
}

function toSetupRequestError(err: unknown): SetupRequestError {
  if (isFetchError(err)) {
    const fe = err as FetchError<{ message?: string; error?: string } | string | undefined>;
    const body = fe.data;
    const detail = typeof body === 'string' ? body : body?.message || body?.error || fe.statusText || 'request failed';
    return new SetupRequestError(`HTTP ${fe.status}: ${detail}`, fe.status);
  }
  return new SetupRequestError(err instanceof Error ? err.message : String(err));
}

/** Validates the resource's answer so that a malformed reply is an error, not a blank page. */
export function parseSetup(data: unknown): SetupStatus {
  if (!isObject(data) || !isObject(data.prometheus) || !isObject(data.profile)) {
    throw new SetupRequestError('the data source answered with an unexpected setup document');
  }
  const p = data.prometheus;
  const prof = data.profile;
  const probes = Array.isArray(data.probes) ? data.probes : [];
  return {
    prometheus: {
      url: str(p.url),
      ok: p.ok === true,
      version: str(p.version) || undefined,
      error: str(p.error) || undefined,
    },
    profile: { name: str(prof.name), detected: prof.detected === true },
    probes: probes.filter(isObject).map((probe) => ({
      url: str(probe.url),
      ok: probe.ok === true,
      gpus: typeof probe.gpus === 'number' ? probe.gpus : undefined,
      error: str(probe.error) || undefined,
    })),
    warmupWindow: str(data.warmupWindow),
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}
