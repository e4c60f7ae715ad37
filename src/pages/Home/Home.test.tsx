import React from 'react';
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';

import { DATASOURCE_TYPE } from '../../constants';
import { dataSourceSettings, installBackend, installDataSources } from '../../test/grafanaServices';
import Home from './Home';

const SETUP_URL = '/api/datasources/uid/inferscope/resources/setup';

const okSetup = {
  prometheus: { url: 'http://prometheus:9090', ok: true, version: '2.42.0', error: '' },
  profile: { name: 'custom', detected: true },
  probes: [{ url: 'http://probe:9835', ok: true, gpus: 8, error: '' }],
  warmupWindow: '2m',
  checks: [
    { check: 'scrape interval', level: 'ok', message: 'every 15s or faster: inference' },
    { check: 'retention', level: 'ok', message: '30d of samples kept' },
  ],
};

function useInferscopeDataSources(...uids: string[]) {
  installDataSources([
    dataSourceSettings({ uid: 'prom', name: 'Prometheus', type: 'prometheus', isDefault: true }),
    ...uids.map((uid) => dataSourceSettings({ uid, name: `Inferscope ${uid}`, type: DATASOURCE_TYPE })),
  ]);
}

function check(title: string) {
  return within(screen.getByRole('list', { name: 'Set-up checks' })).getByRole('listitem', { name: title });
}

describe('Home page', () => {
  test('shows every check passing when the set-up is healthy', async () => {
    useInferscopeDataSources('inferscope');
    const requests = installBackend({ [SETUP_URL]: { status: 200, body: okSetup } });

    render(<Home settings={{ datasourceUid: 'inferscope' }} />);

    const prom = await screen.findByRole('listitem', { name: 'Prometheus' });
    expect(prom).toHaveTextContent('OK');
    expect(prom).toHaveTextContent('http://prometheus:9090');
    expect(prom).toHaveTextContent('Version 2.42.0');
    expect(check('Metric profile')).toHaveTextContent('custom (detected from the metric names)');
    const probe = check('GPU probe http://probe:9835');
    expect(probe).toHaveTextContent('OK');
    expect(probe).toHaveTextContent('8 GPU(s)');
    expect(check('Warm-up window')).toHaveTextContent('2m');
    expect(check('Scrape interval')).toHaveTextContent('OK');
    expect(check('Retention')).toHaveTextContent('30d of samples kept');
    expect(screen.queryByText(/Failing/)).not.toBeInTheDocument();
    expect(requests.map((r) => `${r.method} ${r.url}`)).toEqual([`GET ${SETUP_URL}`]);
  });

  test('shows the Prometheus error with a fix-it hint when Prometheus fails', async () => {
    useInferscopeDataSources('inferscope');
    installBackend({
      [SETUP_URL]: {
        status: 200,
        body: {
          ...okSetup,
          prometheus: {
            url: 'http://prometheus:9090',
            ok: false,
            version: '',
            error: 'Prometheus at http://prometheus:9090: dial tcp 10.0.0.9:9090: connect: connection refused',
          },
          probes: [
            { url: 'http://probe:9835', ok: false, error: 'probe http://probe:9835: context deadline exceeded' },
          ],
        },
      },
    });

    render(<Home settings={{ datasourceUid: 'inferscope' }} />);

    const prom = await screen.findByRole('listitem', { name: 'Prometheus' });
    expect(prom).toHaveTextContent('Failing');
    expect(prom).toHaveTextContent(
      'Error: Prometheus at http://prometheus:9090: dial tcp 10.0.0.9:9090: connect: connection refused'
    );
    expect(prom).toHaveTextContent(/reachable from the Grafana server/);
    expect(prom).not.toHaveTextContent('Version');

    const probe = check('GPU probe http://probe:9835');
    expect(probe).toHaveTextContent('Failing');
    expect(probe).toHaveTextContent('context deadline exceeded');
    expect(probe).toHaveTextContent(/inferscope-probe runs on that node/);
  });

  test("warns, with the fix, on a slow scrape and a short retention, and lists a fleet's servers", async () => {
    useInferscopeDataSources('inferscope');
    installBackend({
      [SETUP_URL]: {
        status: 200,
        body: {
          ...okSetup,
          profile: {
            name: 'custom',
            detected: true,
            servers: [
              { profile: 'custom', title: 'Custom (prometheus_client)', models: 2 },
              { profile: 'vllm', title: 'vLLM', models: 1 },
            ],
          },
          checks: [
            {
              check: 'scrape interval',
              level: 'warn',
              message: 'scraped less often than every 15s: inference every 1m0s',
              fix: 'set scrape_interval: 15s on these jobs (or in global:) in prometheus.yml',
            },
            {
              check: 'retention',
              level: 'unchecked',
              message: 'the retention could not be checked: no flags endpoint',
            },
          ],
        },
      },
    });

    render(<Home settings={{ datasourceUid: 'inferscope' }} />);

    const scrape = await screen.findByRole('listitem', { name: 'Scrape interval' });
    expect(scrape).toHaveTextContent('inference every 1m0s');
    expect(scrape).toHaveTextContent('set scrape_interval: 15s');
    expect(scrape).toHaveTextContent('Warning');
    expect(check('Retention')).toHaveTextContent('Not checked: the retention could not be checked');
    expect(check('Metric profile')).toHaveTextContent(
      'Servers found: Custom (prometheus_client) (2 models), vLLM (1 model)'
    );
  });

  test('asks for a data source when none of type Inferscope exists', () => {
    useInferscopeDataSources();
    const requests = installBackend({});

    render(<Home settings={{}} />);

    expect(screen.getByText('No Inferscope data source')).toBeInTheDocument();
    expect(screen.getByRole('link', { name: /add data source/i })).toHaveAttribute(
      'href',
      '/connections/datasources/new'
    );
    expect(requests).toHaveLength(0);
  });

  test('explains a backend that does not answer', async () => {
    useInferscopeDataSources('inferscope');
    installBackend({ [SETUP_URL]: { status: 500, body: { message: 'plugin unavailable' } } });

    render(<Home settings={{ datasourceUid: 'inferscope' }} />);

    expect(await screen.findByText('The data source did not answer')).toBeInTheDocument();
    expect(screen.getByText('HTTP 500: plugin unavailable')).toBeInTheDocument();
  });

  test('falls back to an existing data source when the configured uid is gone', async () => {
    useInferscopeDataSources('other');
    const requests = installBackend({
      '/api/datasources/uid/other/resources/setup': { status: 200, body: { ...okSetup, probes: [] } },
    });

    render(<Home settings={{ datasourceUid: 'deleted' }} />);

    expect(screen.getByText('Configured data source not found')).toBeInTheDocument();
    expect(await screen.findByRole('listitem', { name: 'GPU probes' })).toHaveTextContent('None configured');
    expect(requests.map((r) => r.url)).toEqual(['/api/datasources/uid/other/resources/setup']);
  });

  test('checks again on request', async () => {
    useInferscopeDataSources('inferscope');
    let calls = 0;
    installBackend({
      [SETUP_URL]: () => {
        calls++;
        return calls === 1 ? { status: 502, body: { message: 'bad gateway' } } : { status: 200, body: okSetup };
      },
    });

    render(<Home settings={{ datasourceUid: 'inferscope' }} />);
    expect(await screen.findByText('HTTP 502: bad gateway')).toBeInTheDocument();

    await userEvent.click(screen.getByRole('button', { name: /check again/i }));

    expect(await screen.findByRole('listitem', { name: 'Prometheus' })).toHaveTextContent('OK');
    expect(calls).toBe(2);
  });

  test('links to the overview dashboard, the triage, the release gate and the alert rules', async () => {
    useInferscopeDataSources('inferscope');
    installBackend({ [SETUP_URL]: { status: 200, body: okSetup } });

    render(<Home settings={{ datasourceUid: 'inferscope' }} />);

    const nav = screen.getByRole('navigation', { name: 'Inferscope' });
    expect(within(nav).getByRole('link', { name: /overview dashboard/i })).toHaveAttribute(
      'href',
      '/d/inferscope-overview/inferscope-overview'
    );
    expect(within(nav).getByRole('link', { name: /alert rules/i })).toHaveAttribute(
      'href',
      '/a/inferscope-monitor-app/alert-rules'
    );
    expect(within(nav).getByRole('link', { name: /triage/i })).toHaveAttribute(
      'href',
      '/a/inferscope-monitor-app/triage'
    );
    expect(within(nav).getByRole('link', { name: /release gate/i })).toHaveAttribute(
      'href',
      '/a/inferscope-monitor-app/gate'
    );
    expect(await screen.findByRole('listitem', { name: 'Prometheus' })).toHaveTextContent('OK');
  });
});
