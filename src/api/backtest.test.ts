import answer from '../pages/AlertRules/testdata/backtest.json';
import { installBackend } from '../test/grafanaServices';
import { BacktestRequestError, backtestUrl, parseBacktest, runBacktest } from './backtest';

describe('backtest client', () => {
  test('posts the rules parameters and the window, and reads the answer', async () => {
    const requests = installBackend({ [`POST ${backtestUrl('inferscope')}`]: { status: 200, body: answer } });
    const body = { params: { latencyP0Ratio: '4' }, from: '2026-11-16T12:00:00Z', to: '2026-11-23T12:00:00Z' };

    const got = await runBacktest('inferscope', body);

    expect(requests[0].data).toEqual(body);
    expect(got.rules.map((r) => [r.id, r.fired])).toEqual(answer.rules.map((r) => [r.id, r.fired]));
  });

  test('502 names the status and the data source message', async () => {
    installBackend({ [`POST ${backtestUrl('inferscope')}`]: { status: 502, body: { error: 'Prometheus timed out' } } });
    const err = await runBacktest('inferscope', { params: {}, from: '1', to: '2' }).catch((e) => e);
    expect(err).toBeInstanceOf(BacktestRequestError);
    expect(err.message).toBe('the data source answered HTTP 502: Prometheus timed out');
  });

  test('fills absent lists so that the page can rely on them', () => {
    const got = parseBacktest({ from: 'a', to: 'b', rules: [{ id: 'latency-p0', fired: 0 }] });
    expect(got.rules[0]).toMatchObject({ episodes: [], error: '', unavailable: '' });
    expect(got.warmups).toEqual([]);
  });

  test.each([null, {}, { from: 'a', to: 'b' }])('rejects %p', (body) => {
    expect(() => parseBacktest(body)).toThrow(BacktestRequestError);
  });
});
