import { installBackend } from '../test/grafanaServices';
import {
  errorMessage,
  failureDetail,
  failureWithStatus,
  fetchResource,
  ResourceRequestError,
  resourceFailure,
  resourceUrl,
} from './resource';

class TestRequestError extends ResourceRequestError {
  name = 'TestRequestError';
}

const URL = resourceUrl('a/b', 'thing');

/** What the request was rejected with; a resolved request fails the test. */
function rejection(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => {
      throw new Error('the request succeeded');
    },
    (err: Error) => err
  );
}

describe('resourceUrl', () => {
  test('escapes the uid', () => {
    expect(URL).toBe('/api/datasources/uid/a%2Fb/resources/thing');
  });
});

describe('fetchResource', () => {
  test('GET sends the parameters, no body, and no Grafana error pop-up', async () => {
    const requests = installBackend({ [`GET ${URL}`]: { status: 200, body: { ok: true } } });
    await expect(fetchResource('a/b', 'thing', { params: { model: 'm' } }, TestRequestError)).resolves.toEqual({
      ok: true,
    });
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ method: 'GET', params: { model: 'm' }, showErrorAlert: false });
    expect(requests[0]).not.toHaveProperty('data');
  });

  test('POST sends the body', async () => {
    const requests = installBackend({ [`POST ${URL}`]: { status: 200, body: [] } });
    await fetchResource('a/b', 'thing', { method: 'POST', body: { action: 'x' } }, TestRequestError);
    expect(requests[0]).toMatchObject({ method: 'POST', data: { action: 'x' } });
    expect(requests[0]).not.toHaveProperty('params');
  });

  test('a failure is thrown as the given type, with the status, worded as asked', async () => {
    installBackend({ [`GET ${URL}`]: { status: 502, body: { error: 'Prometheus timed out' } } });
    const plain = await rejection(fetchResource('a/b', 'thing', {}, TestRequestError));
    expect(plain).toBeInstanceOf(TestRequestError);
    expect(plain).toBeInstanceOf(ResourceRequestError);
    expect(plain).toMatchObject({ name: 'TestRequestError', status: 502, message: 'Prometheus timed out' });

    const worded = await rejection(fetchResource('a/b', 'thing', { describe: failureWithStatus }, TestRequestError));
    expect(worded.message).toBe('the data source answered HTTP 502: Prometheus timed out');
  });

  test('no answer at all has no status', async () => {
    installBackend({
      [`GET ${URL}`]: () => {
        throw new Error('connection refused');
      },
    });
    const err = await rejection(fetchResource('a/b', 'thing', {}, TestRequestError));
    expect(err).toBeInstanceOf(TestRequestError);
    expect((err as TestRequestError).status).toBeUndefined();
    expect(err.message).toBe('the data source could not be reached: connection refused');
  });
});

describe('resourceFailure', () => {
  const fetchError = (data: unknown, statusText = 'Bad Gateway') => ({ status: 502, statusText, data, config: {} });

  test.each([
    ['the data source error first', { error: 'e', message: 'm' }, 'error', 'e'],
    ['Grafana message first when asked', { error: 'e', message: 'm' }, 'message', 'm'],
    ['the other field when the first is missing', { message: 'm' }, 'error', 'm'],
    ['a plain-text body', 'upstream down', 'error', 'upstream down'],
    ['the status text when the body says nothing', {}, 'error', 'Bad Gateway'],
  ] as const)('%s', (_, body, field, detail) => {
    expect(resourceFailure(fetchError(body), field)).toEqual({ status: 502, detail });
  });

  test('"request failed" when nothing says why', () => {
    expect(resourceFailure(fetchError(undefined, ''))).toEqual({ status: 502, detail: 'request failed' });
  });

  test('anything else is no answer', () => {
    expect(resourceFailure(new Error('offline'))).toEqual({ detail: 'offline' });
    expect(resourceFailure('offline')).toEqual({ detail: 'offline' });
  });
});

describe('wording', () => {
  test('failureDetail and failureWithStatus', () => {
    expect(failureDetail({ status: 400, detail: 'bad window' })).toBe('bad window');
    expect(failureWithStatus({ status: 400, detail: 'bad window' })).toBe(
      'the data source answered HTTP 400: bad window'
    );
    expect(failureDetail({ detail: 'offline' })).toBe('the data source could not be reached: offline');
    expect(failureWithStatus({ detail: 'offline' })).toBe('the data source could not be reached: offline');
  });

  test('errorMessage reads anything thrown', () => {
    expect(errorMessage(new TypeError('boom'))).toBe('boom');
    expect(errorMessage(42)).toBe('42');
  });
});
