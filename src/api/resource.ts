import { FetchError, isFetchError } from '@grafana/runtime';

import { AnswerTooLargeError, fetchBounded } from './bounded';

/**
 * The one way the clients ask the data source's resources
 * (`/api/datasources/uid/<uid>/resources/<path>`) and read why a request failed.
 */

export function resourceUrl(uid: string, path: string): string {
  return `/api/datasources/uid/${encodeURIComponent(uid)}/resources/${path}`;
}

/** Base of each client's error: `status` is the HTTP status, absent when no answer came. */
export class ResourceRequestError extends Error {
  constructor(
    message: string,
    readonly status?: number
  ) {
    super(message);
    this.name = 'ResourceRequestError';
  }
}

/** Why a request failed: the HTTP status and the answer's words, or (no status) why none came. */
export interface ResourceFailure {
  status?: number;
  detail: string;
}

export interface ResourceRequest {
  method?: 'GET' | 'POST';
  params?: Record<string, string>;
  body?: unknown;
  /** Which field of an error body speaks first: the data source writes `error`, Grafana `message`. */
  detailField?: 'error' | 'message';
  /** How a failure is worded; `failureDetail` unless given. */
  describe?: (failure: ResourceFailure) => string;
}

/** An error's message, whatever was thrown. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Reads a failed fetch: the status and the body's words, or the reason nothing answered. */
export function resourceFailure(err: unknown, detailField: 'error' | 'message' = 'error'): ResourceFailure {
  if (!isFetchError(err)) {
    return { detail: errorMessage(err) };
  }
  const fe = err as FetchError<{ error?: string; message?: string } | string | undefined>;
  const body = fe.data;
  const other = detailField === 'error' ? 'message' : 'error';
  const detail =
    typeof body === 'string' ? body : body?.[detailField] || body?.[other] || fe.statusText || 'request failed';
  return { status: fe.status, detail };
}

/** A failure in the data source's words; no answer at all is said as such. */
export function failureDetail(failure: ResourceFailure): string {
  return failure.status === undefined ? `the data source could not be reached: ${failure.detail}` : failure.detail;
}

/** A failure in the data source's words after its HTTP status. */
export function failureWithStatus(failure: ResourceFailure): string {
  return failure.status === undefined
    ? failureDetail(failure)
    : `the data source answered HTTP ${failure.status}: ${failure.detail}`;
}

/**
 * Asks one resource and answers its JSON, unchecked. A failure is thrown as the client's own
 * error type, worded by `req.describe`.
 */
export async function fetchResource(
  uid: string,
  path: string,
  req: ResourceRequest,
  ErrorType: new (message: string, status?: number) => Error
): Promise<unknown> {
  const { method = 'GET', params, body, detailField, describe = failureDetail } = req;
  try {
    const response = await fetchBounded<unknown>({
      url: resourceUrl(uid, path),
      method,
      ...(params && { params }),
      ...(body !== undefined && { data: body }),
      showErrorAlert: false,
    });
    return response.data;
  } catch (err) {
    if (err instanceof AnswerTooLargeError) {
      throw new ErrorType(err.message, err.status !== undefined && err.status >= 400 ? err.status : undefined);
    }
    const failure = resourceFailure(err, detailField);
    throw new ErrorType(describe(failure), failure.status);
  }
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
