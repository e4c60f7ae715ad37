import answer from '../pages/Triage/testdata/triage.json';
import { installBackend } from '../test/grafanaServices';
import { fetchTriage, parseTimeParam, parseTriage, toRFC3339, TriageRequestError, triageUrl } from './triage';

const URL = triageUrl('inferscope');
const REQUEST = { model: 'recsys-ranker', from: '2026-11-23T04:10:00Z', to: '2026-11-23T04:25:00Z' };

describe('parseTimeParam', () => {
  const now = new Date('2026-11-23T12:00:00Z');

  test.each([
    ['1795406400000', '2026-11-23T04:00:00Z'], // milliseconds, as alert links carry them
    ['1795406400', '2026-11-23T04:00:00Z'], // Unix seconds
    ['2026-11-23T04:00:00Z', '2026-11-23T04:00:00Z'],
    ['2026-11-23T05:00:00+01:00', '2026-11-23T04:00:00Z'],
    ['2026-11-23T04:00:00.250Z', '2026-11-23T04:00:00Z'],
    ['now', '2026-11-23T12:00:00Z'],
    ['now-15m', '2026-11-23T11:45:00Z'],
    ['now-7d', '2026-11-16T12:00:00Z'],
    ['now-1d/d', '2026-11-22T00:00:00Z'],
  ])('%s is %s', (text, want) => {
    const d = parseTimeParam(text, false, now);
    expect(d && toRFC3339(d)).toBe(want);
  });

  test.each(['', 'yesterday', 'now-15x', '2026-11-23', '12:00'])('%p is not a time', (text) => {
    expect(parseTimeParam(text, false, now)).toBeUndefined();
  });
});

describe('fetchTriage', () => {
  test('asks with the optional fields only when set and reads the answer', async () => {
    const requests = installBackend({ [`GET ${URL}`]: { status: 200, body: answer } });

    const got = await fetchTriage('inferscope', { ...REQUEST, version: 'v1.4.0', instance: '' });

    expect(got.verdict).toBe(answer.verdict);
    expect(got.causes.map((c) => c.id)).toEqual(answer.causes.map((c) => c.id));
    expect(requests[0].params).toEqual({ ...REQUEST, version: 'v1.4.0' });
    expect(requests[0].showErrorAlert).toBe(false);
  });

  test('asks by node and GPU without a model (a GPU alert)', async () => {
    const requests = installBackend({ [`GET ${URL}`]: { status: 200, body: answer } });

    await fetchTriage('inferscope', { node: 'node-a', gpu: '6', from: REQUEST.from, to: REQUEST.to });

    expect(requests[0].params).toEqual({ node: 'node-a', gpu: '6', from: REQUEST.from, to: REQUEST.to });
  });

  test.each([
    [502, 'Prometheus at http://prometheus:9090: connection refused'],
    [400, 'from: "yesterday" is not RFC 3339 or Unix seconds'],
  ])('HTTP %d keeps the status and the data source message', async (status, message) => {
    installBackend({ [`GET ${URL}`]: { status, body: { error: message } } });

    const err = await fetchTriage('inferscope', REQUEST).catch((e) => e);

    expect(err).toBeInstanceOf(TriageRequestError);
    expect(err).toMatchObject({ status, message });
  });

  test.each([
    null,
    [],
    {},
    { verdict: 'diagnosed', causes: [], steps: [] },
    { verdict: 1, causes: [], steps: [], window: {} },
  ])('rejects %p', (body) => {
    expect(() => parseTriage(body)).toThrow(TriageRequestError);
  });
});
