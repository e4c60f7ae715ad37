import { installBackend } from '../test/grafanaServices';
import {
  AnswerTooLargeError,
  DEFAULT_MAX_ANSWER_BYTES,
  fetchBounded,
  getMaxAnswerBytes,
  parseSize,
  setMaxAnswerSize,
} from './bounded';
import catalog from '../pages/AlertRules/testdata/rules-catalog.json';
import { rulesUrl } from './alerting';
import { folderUrl, ProvisionError, provisionRules } from './alertingGrafana';
import { fetchResource, resourceUrl, ResourceRequestError } from './resource';

/** What the request was rejected with; a resolved request fails the test. */
function rejection(p: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  return p.then(
    () => {
      throw new Error('the request succeeded');
    },
    (err: Error & Record<string, unknown>) => err
  );
}

afterEach(() => setMaxAnswerSize(undefined));

describe('fetchBounded', () => {
  test('asks for text and parses JSON itself', async () => {
    const requests = installBackend({ '/api/x': { status: 200, body: { a: [1, 2] } } });
    const res = await fetchBounded<{ a: number[] }>({ url: '/api/x' });
    expect(res.data).toEqual({ a: [1, 2] });
    expect(requests[0]).toMatchObject({ url: '/api/x', responseType: 'text' });
  });

  test('an answer past the cap is an error naming the cap, the size and how to narrow it', async () => {
    installBackend({ '/api/big': { status: 200, body: { rules: 'x'.repeat(2000) } } });
    const err = await rejection(fetchBounded({ url: '/api/big' }, 1024));
    expect(err).toBeInstanceOf(AnswerTooLargeError);
    expect(err.message).toBe(
      'the answer of /api/big is 2 kiB, larger than the limit of 1 kiB: narrow the request (fewer models or rules, a shorter range), or raise the app setting maxAnswerSize'
    );
    await expect(fetchBounded({ url: '/api/big' }, 4096)).resolves.toBeDefined();
  });

  test('counts UTF-8 bytes, not characters', async () => {
    installBackend({ '/api/u': { status: 200, body: 'é'.repeat(600) } }); // 1,200 bytes
    await expect(rejection(fetchBounded({ url: '/api/u' }, 1000))).resolves.toBeInstanceOf(AnswerTooLargeError);
    await expect(fetchBounded({ url: '/api/u' }, 1200)).resolves.toMatchObject({ data: 'é'.repeat(600) });
  });

  test('an error keeps its status and its parsed body; an oversized one is refused too', async () => {
    installBackend({
      '/api/e': { status: 403, body: { message: 'denied' } },
      '/api/huge-error': { status: 500, body: 'y'.repeat(5000) },
    });
    const err = await rejection(fetchBounded({ url: '/api/e' }));
    expect(err).toMatchObject({ status: 403, data: { message: 'denied' } });
    const big = await rejection(fetchBounded({ url: '/api/huge-error' }, 1000));
    expect(big).toBeInstanceOf(AnswerTooLargeError);
    expect(big.status).toBe(500);
  });

  test('the cap is the app setting maxAnswerSize, else 16 MiB', () => {
    expect(getMaxAnswerBytes()).toBe(DEFAULT_MAX_ANSWER_BYTES);
    expect(DEFAULT_MAX_ANSWER_BYTES).toBe(16 * 1024 * 1024);
    expect(setMaxAnswerSize('32MiB')).toBe(32 * 1024 * 1024);
    expect(setMaxAnswerSize('500kB')).toBe(500_000);
    expect(setMaxAnswerSize('lots')).toBe(DEFAULT_MAX_ANSWER_BYTES);
    expect(parseSize('1 GiB')).toBe(1024 ** 3);
    expect(parseSize('-1')).toBeUndefined();
  });
});

describe('every reader is bounded', () => {
  test('a data-source resource past the cap fails in its client error type, without a status', async () => {
    installBackend({ [resourceUrl('ds', 'rules')]: { status: 200, body: { groups: 'z'.repeat(3000) } } });
    setMaxAnswerSize(2048);
    const err = await rejection(fetchResource('ds', 'rules', {}, ResourceRequestError));
    expect(err).toBeInstanceOf(ResourceRequestError);
    expect(err.status).toBeUndefined();
    expect(err.message).toContain('larger than the limit of 2 kiB');
  });

  test('the alerting provisioning API past the cap names the step', async () => {
    installBackend({
      [`POST ${rulesUrl('ds')}`]: { status: 200, body: catalog },
      [`GET ${folderUrl(catalog.folder.uid)}`]: {
        status: 200,
        body: { uid: catalog.folder.uid, pad: 'p'.repeat(40000) },
      },
    });
    setMaxAnswerSize(32 * 1024); // the recorded catalog (13 kiB) passes, the folder does not
    const err = await rejection(provisionRules('ds', {}));
    expect(err).toBeInstanceOf(ProvisionError);
    expect(err.message).toMatch(
      /^Grafana's answer was too large while checking the folder: the answer of \/api\/folders\/\S+ is 39\.1 kiB, larger than the limit of 32 kiB: narrow the request/
    );
  });
});
