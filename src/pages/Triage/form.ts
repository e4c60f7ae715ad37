import { parseTimeParam, toRFC3339, TriageRequest } from '../../api/triage';

/** The Triage form as typed; times as written (RFC 3339, ms epoch, now-15m). */
export interface TriageForm {
  model: string;
  version: string;
  instance: string;
  /** A GPU alert's node (and GPU): without a model, every model served on the node. */
  node: string;
  gpu: string;
  from: string;
  to: string;
}

export const DEFAULT_FROM = 'now-15m';
export const DEFAULT_TO = 'now';

/**
 * The form an alert link opens: /a/inferscope-monitor-app/triage?model=…&version=…&instance=…
 * &from=<ms>&to=<ms> (a service alert) or ?node=…&gpu=…&from=…&to=… (a GPU alert). Epoch times
 * are shown as RFC 3339; relative ones are kept as written, so that a link opened later still
 * means "the last 15 minutes".
 */
export function formFromSearch(search: URLSearchParams): TriageForm {
  return {
    model: search.get('model')?.trim() ?? '',
    version: search.get('version')?.trim() ?? '',
    instance: search.get('instance')?.trim() ?? '',
    node: search.get('node')?.trim() ?? '',
    gpu: search.get('gpu')?.trim() ?? '',
    from: readableTime(search.get('from'), DEFAULT_FROM),
    to: readableTime(search.get('to'), DEFAULT_TO),
  };
}

function readableTime(raw: string | null, fallback: string): string {
  const s = raw?.trim() ?? '';
  if (s === '') {
    return fallback;
  }
  if (/^\d+(\.\d+)?$/.test(s)) {
    const d = parseTimeParam(s);
    return d ? toRFC3339(d) : s;
  }
  return s;
}

/** The search parameters that reopen this form (empty fields left out). */
export function searchFromForm(form: TriageForm): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of ['model', 'version', 'instance', 'node', 'gpu', 'from', 'to'] as const) {
    const v = form[key].trim();
    if (v !== '') {
      out[key] = v;
    }
  }
  return out;
}

export type FormCheck =
  { ok: true; request: TriageRequest } | { ok: false; errors: Partial<Record<keyof TriageForm, string>> };

const TIME_HELP = 'use RFC 3339 (2026-11-23T04:10:00Z), milliseconds since the epoch, or now-15m';

/** Whether the form asks about a node's models rather than one model (a GPU alert). */
export function isNodeForm(form: TriageForm): boolean {
  return form.model.trim() === '' && form.node.trim() !== '';
}

/**
 * Validates the form and resolves its times to what the resource reads. Relative times are read
 * against one `now`, so `now-15m` to `now` is exactly 15 minutes.
 */
export function checkForm(form: TriageForm, now: Date = new Date()): FormCheck {
  const errors: Partial<Record<keyof TriageForm, string>> = {};
  const model = form.model.trim();
  const node = form.node.trim();
  if (model === '' && node === '') {
    errors.model = 'model: name the model to triage, or a node';
  }
  if (model === '' && node !== '' && form.version.trim() !== '') {
    errors.version = "version: needs a model (a node's models are triaged with all their versions)";
  }
  if (form.gpu.trim() !== '' && node === '' && form.instance.trim() === '') {
    errors.gpu = 'gpu: name the node the GPU is on';
  }
  const from = parseTimeParam(form.from || DEFAULT_FROM, false, now);
  const to = parseTimeParam(form.to || DEFAULT_TO, true, now);
  if (!from) {
    errors.from = `from: "${form.from}" is not a time; ${TIME_HELP}`;
  }
  if (!to) {
    errors.to = `to: "${form.to}" is not a time; ${TIME_HELP}`;
  }
  if (from && to && from.getTime() >= to.getTime()) {
    errors.to = `to: must be after from (${toRFC3339(from)})`;
  }
  if (Object.keys(errors).length > 0 || !from || !to) {
    return { ok: false, errors };
  }
  return {
    ok: true,
    request: {
      model: model || undefined,
      version: form.version.trim() || undefined,
      instance: form.instance.trim() || undefined,
      node: node || undefined,
      gpu: form.gpu.trim() || undefined,
      from: toRFC3339(from),
      to: toRFC3339(to),
    },
  };
}
