import fail from '../pages/Gate/testdata/gate-fail.json';
import { installBackend } from '../test/grafanaServices';
import { fetchGate, gateQuery, GateRequestError, gateUrl, parseGate, pipelineUrl } from './gate';

const REQUEST = {
  model: 'recsys-ranker',
  baseline: 'v1.4.0',
  canary: 'v1.5.0',
  window: '2h',
  latencyThreshold: '10%',
  memoryThreshold: '5%',
};

describe('gate client', () => {
  test('the page asks with statusCodes=false so that a fail is an answer', async () => {
    const requests = installBackend({ [`GET ${gateUrl('inferscope')}`]: { status: 200, body: fail } });

    const report = await fetchGate('inferscope', REQUEST);

    expect(report.verdict).toBe('fail');
    expect(requests[0].params).toEqual({ ...REQUEST, statusCodes: 'false' });
  });

  test('empty window and thresholds fall back to the documented defaults', () => {
    expect(gateQuery({ ...REQUEST, window: '', latencyThreshold: '', memoryThreshold: '' }, true)).toEqual(REQUEST);
  });

  test('pipeline URLs: JSON verdict for Argo Rollouts, status codes for Flagger', () => {
    expect(pipelineUrl('https://grafana.example/', 'ds 1', REQUEST, false)).toBe(
      'https://grafana.example/api/datasources/uid/ds%201/resources/gate?model=recsys-ranker&baseline=v1.4.0&canary=v1.5.0&window=2h&latencyThreshold=10%25&memoryThreshold=5%25&statusCodes=false'
    );
    expect(pipelineUrl('https://grafana.example/sub', 'inferscope', REQUEST, true)).not.toContain('statusCodes');
  });

  test.each([
    [400, 'window: "forever" is not a Prometheus duration'],
    [502, 'Prometheus at http://prometheus:9090: connection refused'],
  ])('HTTP %d keeps the status and message', async (status, message) => {
    installBackend({ [`GET ${gateUrl('inferscope')}`]: { status, body: { error: message } } });
    await expect(fetchGate('inferscope', REQUEST)).rejects.toMatchObject({ status, message });
  });

  test.each([null, {}, { ...fail, verdict: 'maybe' }, { ...fail, checks: null }])('rejects %p', (body) => {
    expect(() => parseGate(body)).toThrow(GateRequestError);
  });
});
