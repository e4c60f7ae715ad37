import { fetchResource, isObject, ResourceRequestError, resourceUrl } from './resource';

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
  return resourceUrl(uid, 'setup');
}

/** Thrown when the data source's backend does not answer with a usable setup document. */
export class SetupRequestError extends ResourceRequestError {
  name = 'SetupRequestError';
}

export async function fetchSetup(uid: string): Promise<SetupStatus> {
  const data = await fetchResource(
    uid,
    'setup',
    // Grafana's own answer (the backend not running) speaks in `message`: it goes first here.
    { detailField: 'message', describe: (f) => (f.status === undefined ? f.detail : `HTTP ${f.status}: ${f.detail}`) },
    SetupRequestError
  );
  return parseSetup(data);
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

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}
