import { fetchResource, isObject, ResourceRequestError, resourceUrl } from './resource';

/** Shape of GET /api/datasources/uid/<uid>/resources/setup, served by the Go data source. */
export interface SetupStatus {
  prometheus: PrometheusStatus;
  profile: ProfileStatus;
  probes: ProbeStatus[];
  warmupWindow: string;
  /** The brief's set-up checks (scrape interval, retention), read from the store's status API. */
  checks: SetupCheck[];
}

export interface SetupCheck {
  /** "scrape interval" or "retention". */
  check: string;
  level: 'ok' | 'warn' | 'unchecked';
  message: string;
  fix?: string;
}

export interface ServerStatus {
  profile: string;
  title: string;
  models: number;
}

export interface PrometheusStatus {
  url: string;
  ok: boolean;
  version?: string;
  error?: string;
}

export interface ProfileStatus {
  /** custom | vllm | triton | torchserve | tgi | sglang; empty when nothing was recognised. */
  name: string;
  /** true when the name came from the metric names Prometheus has, false when set by hand. */
  detected: boolean;
  /** The inference servers found, each with the models it serves (a profile per model). */
  servers: ServerStatus[];
  /** A forced profile whose metrics Prometheus lacks, naming them. */
  warning?: string;
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
    profile: {
      name: str(prof.name),
      detected: prof.detected === true,
      servers: (Array.isArray(prof.servers) ? prof.servers : []).filter(isObject).map((sv) => ({
        profile: str(sv.profile),
        title: str(sv.title),
        models: typeof sv.models === 'number' ? sv.models : 0,
      })),
      warning: str(prof.warning) || undefined,
    },
    probes: probes.filter(isObject).map((probe) => ({
      url: str(probe.url),
      ok: probe.ok === true,
      gpus: typeof probe.gpus === 'number' ? probe.gpus : undefined,
      error: str(probe.error) || undefined,
    })),
    warmupWindow: str(data.warmupWindow),
    checks: (Array.isArray(data.checks) ? data.checks : []).filter(isObject).map((c) => ({
      check: str(c.check),
      level: c.level === 'ok' || c.level === 'warn' ? c.level : 'unchecked',
      message: str(c.message),
      fix: str(c.fix) || undefined,
    })),
  };
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}
