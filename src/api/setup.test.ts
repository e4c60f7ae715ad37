import { parseSetup, SetupRequestError } from './setup';

describe('parseSetup', () => {
  test('reads the documented setup document', () => {
    const setup = parseSetup({
      prometheus: { url: 'http://prometheus:9090', ok: true, version: '2.42.0', error: '' },
      profile: { name: 'vllm', detected: false, servers: [{ profile: 'vllm', title: 'vLLM', models: 2 }] },
      probes: [
        { url: 'http://probe:9835', ok: true, gpus: 8, error: '' },
        { url: 'http://probe-2:9835', ok: false, error: 'connection refused' },
      ],
      warmupWindow: '90s',
      checks: [
        {
          check: 'retention',
          level: 'warn',
          message: '7d of samples kept',
          fix: 'start Prometheus with --storage.tsdb.retention.time=30d',
        },
        { check: 'scrape interval', level: 'strange', message: 'x' },
      ],
    });
    expect(setup).toEqual({
      prometheus: { url: 'http://prometheus:9090', ok: true, version: '2.42.0', error: undefined },
      profile: {
        name: 'vllm',
        detected: false,
        servers: [{ profile: 'vllm', title: 'vLLM', models: 2 }],
        warning: undefined,
      },
      probes: [
        { url: 'http://probe:9835', ok: true, gpus: 8, error: undefined },
        { url: 'http://probe-2:9835', ok: false, gpus: undefined, error: 'connection refused' },
      ],
      warmupWindow: '90s',
      checks: [
        {
          check: 'retention',
          level: 'warn',
          message: '7d of samples kept',
          fix: 'start Prometheus with --storage.tsdb.retention.time=30d',
        },
        { check: 'scrape interval', level: 'unchecked', message: 'x', fix: undefined },
      ],
    });
  });

  test('treats anything but true as not ok and tolerates missing probes', () => {
    const setup = parseSetup({ prometheus: { url: 'x', ok: 'yes' }, profile: { name: 'custom', detected: 1 } });
    expect(setup.prometheus.ok).toBe(false);
    expect(setup.profile.detected).toBe(false);
    expect(setup.probes).toEqual([]);
  });

  test.each([null, 'text', [], {}, { prometheus: {} }, { profile: {} }])('rejects %p', (body) => {
    expect(() => parseSetup(body)).toThrow(SetupRequestError);
  });
});
