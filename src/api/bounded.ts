import { lastValueFrom } from 'rxjs';
import { BackendSrvRequest, FetchError, FetchResponse, getBackendSrv, isFetchError } from '@grafana/runtime';

/**
 * Every answer the app reads in the browser — Grafana's own API (alerting provisioning, rule
 * states, folders) and the data source's resources — goes through `fetchBounded`: the body is
 * taken as text, refused past a cap before it is parsed or shown, and parsed here. A runaway
 * answer (a rule group of thousands of rules, a resource gone wrong) then ends in an error that
 * names the cap instead of a tab parsing and rendering hundreds of megabytes. The browser has
 * received the text when the cap is checked: the cap bounds what the app parses and keeps, not
 * the download itself (Grafana's fetch offers no streamed body).
 */

/** The default cap on one answer: 16 MiB of text (the app's largest answers are a few hundred kB). */
export const DEFAULT_MAX_ANSWER_BYTES = 16 * 1024 * 1024;

let maxAnswerBytes = DEFAULT_MAX_ANSWER_BYTES;

/** The cap in force (the app's `maxAnswerSize` setting, else the default). */
export function getMaxAnswerBytes(): number {
  return maxAnswerBytes;
}

/**
 * Sets the cap from the app's `maxAnswerSize` setting ("32MiB", "500kB", a number of bytes);
 * an empty or unreadable setting keeps the default. Returns the cap in force.
 */
export function setMaxAnswerSize(setting: string | number | undefined): number {
  const n = typeof setting === 'number' ? setting : parseSize(setting ?? '');
  maxAnswerBytes = n !== undefined && Number.isFinite(n) && n > 0 ? Math.floor(n) : DEFAULT_MAX_ANSWER_BYTES;
  return maxAnswerBytes;
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
};

/** Reads "16MiB", "500 kB", "1048576"; undefined when it is not a size. */
export function parseSize(s: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(s);
  const unit = m ? SIZE_UNITS[m[2].toLowerCase()] : undefined;
  return m && unit !== undefined ? Number(m[1]) * unit : undefined;
}

/** Writes a byte count as people read it: 16 MiB, 512 kiB, 900 B. */
export function formatBytes(n: number): string {
  if (n >= 1024 ** 2) {
    return `${Number((n / 1024 ** 2).toFixed(1))} MiB`;
  }
  if (n >= 1024) {
    return `${Number((n / 1024).toFixed(1))} kiB`;
  }
  return `${n} B`;
}

/** An answer larger than the cap; `status` is the answer's HTTP status. */
export class AnswerTooLargeError extends Error {
  constructor(
    readonly url: string,
    readonly size: number,
    readonly limit: number,
    readonly status?: number
  ) {
    super(
      `the answer of ${url} is ${formatBytes(size)}, larger than the limit of ${formatBytes(limit)}: ` +
        'narrow the request (fewer models or rules, a shorter range), or raise the app setting maxAnswerSize'
    );
    this.name = 'AnswerTooLargeError';
  }
}

/** The byte length of a text as UTF-8. */
function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      n += 1;
    } else if (c < 0x800) {
      n += 2;
    } else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4; // a surrogate pair: one 4-byte character
      i++;
    } else {
      n += 3;
    }
  }
  return n;
}

/** The text's JSON value; a body that is not JSON stays text (an HTML error page, a plain message). */
function parseBody(text: unknown): unknown {
  if (typeof text !== 'string') {
    return text;
  }
  if (text.trim() === '') {
    return undefined;
  }
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Refuses a body past the cap, before it is parsed; cheap when the text is far under it. */
function checkSize(url: string, body: unknown, limit: number, status?: number): void {
  if (typeof body === 'string' && body.length * 3 > limit) {
    const size = utf8Length(body);
    if (size > limit) {
      throw new AnswerTooLargeError(url, size, limit, status);
    }
  }
}

/**
 * getBackendSrv().fetch with the answer's body bounded by the cap (`maxBytes`, else the app's
 * setting) and parsed as JSON where it is JSON. A failed request is rethrown as Grafana's
 * FetchError with its body parsed the same way (so `data.message` / `data.error` read as before);
 * an oversized body, answer or error, is an AnswerTooLargeError.
 */
export async function fetchBounded<T>(req: BackendSrvRequest, maxBytes?: number): Promise<FetchResponse<T>> {
  const limit = maxBytes ?? maxAnswerBytes;
  let res: FetchResponse<unknown>;
  try {
    res = await lastValueFrom(getBackendSrv().fetch<unknown>({ ...req, responseType: 'text' }));
  } catch (err) {
    if (isFetchError(err)) {
      const fe = err as FetchError<unknown>;
      checkSize(req.url, fe.data, limit, fe.status);
      throw { ...fe, data: parseBody(fe.data) };
    }
    throw err;
  }
  checkSize(req.url, res.data, limit, res.status);
  return { ...res, data: parseBody(res.data) as T };
}
