import React from 'react';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { BackendSrvRequest } from '@grafana/runtime';

import { rulesUrl } from '../../api/alerting';
import { folderUrl, MUTE_TIMINGS_URL, muteTimingUrl, ruleGroupUrl, RULE_STATES_URL } from '../../api/alertingGrafana';
import { DATASOURCE_TYPE } from '../../constants';
import { dataSourceSettings, installBackend, installDataSources, Reply } from '../../test/grafanaServices';
import { renderApp } from '../../test/renderApp';
import AlertRules, { alertRulesTestIds } from './AlertRules';
import catalog from './testdata/rules-catalog.json';
import renderAnswer from './testdata/rules-render.json';
import * as grafana from './testdata/grafana';

const RULES = rulesUrl('inferscope');
const STATES = `${RULE_STATES_URL}?folder_uid=inferscope&rule_group=inferscope`;
const GROUP = ruleGroupUrl('inferscope', 'inferscope');

function inferscopeDataSource() {
  installDataSources([dataSourceSettings({ uid: 'inferscope', name: 'Inferscope', type: DATASOURCE_TYPE })]);
}

/** A Grafana with the folder, no rule group yet, and the recorded data-source answers. */
function grafanaWithoutRules(extra: Record<string, Reply | ((r: BackendSrvRequest) => Reply)> = {}) {
  let stored: unknown;
  return installBackend({
    [`POST ${RULES}`]: (req) => {
      const body = req.data as { action: string; existing?: unknown };
      if (body.action === 'catalog') {
        return { status: 200, body: catalog };
      }
      return {
        status: 200,
        body: { ...renderAnswer, diff: body.existing ? { status: 'unchanged' } : { status: 'missing', rules: [] } },
      };
    },
    '/api/v1/provisioning/contact-points': { status: 200, body: grafana.contactPoints },
    [STATES]: () =>
      stored
        ? { status: 200, body: grafana.ruleStates }
        : { status: 200, body: { status: 'success', data: { groups: [] } } },
    [`GET ${folderUrl('inferscope')}`]: { status: 200, body: grafana.folderFound },
    [`GET ${GROUP}`]: () => (stored ? { status: 200, body: stored } : { status: 404, body: grafana.ruleGroupNotFound }),
    [`GET ${muteTimingUrl('inferscope-record-only')}`]: { status: 404, body: grafana.muteTimingNotFound },
    [`POST ${MUTE_TIMINGS_URL}`]: { status: 200, body: grafana.muteTimingFound },
    [`PUT ${GROUP}`]: () => {
      stored = grafana.ruleGroupAsStored;
      return { status: 200, body: stored };
    },
    ...extra,
  });
}

function row(title: string) {
  return within(screen.getByRole('table', { name: 'Alert rules' })).getByRole('row', { name: title });
}

describe('Alert rules page', () => {
  test('shows the catalog with severity, condition and state', async () => {
    inferscopeDataSource();
    grafanaWithoutRules();

    render(<AlertRules settings={{}} />);

    const p0 = await screen.findByRole('row', { name: 'Latency far above its baseline' });
    expect(p0).toHaveTextContent('P0');
    expect(p0).toHaveTextContent(
      'P95 latency (the mean on servers without a latency histogram) > 3× the mean of the same ±10m time-of-day window on the previous 7 days'
    );
    expect(p0).toHaveTextContent('at once');
    await waitFor(() => expect(p0).toHaveTextContent('Not in Grafana'));
    expect(row('Queue time dominating')).toHaveTextContent('10m');
    expect(row('Cache hit rate dropped')).toHaveTextContent('P2');
    expect(row('Cache hit rate dropped')).not.toHaveTextContent('Unavailable');
    expect(row('Warm-up longer than usual')).toHaveTextContent('P2');
  });

  test("the contact points offered are Grafana's, each name once", async () => {
    inferscopeDataSource();
    grafanaWithoutRules();

    render(<AlertRules settings={{}} />);

    await screen.findByRole('row', { name: 'Latency far above its baseline' });
    await userEvent.click(screen.getByRole('combobox', { name: /^P0 contact point/ }));
    const offered = await screen.findAllByRole('option');
    expect(offered.map((o) => o.textContent)).toEqual(
      expect.arrayContaining(['grafana-default-email', 'ml-chat', 'oncall-phone'])
    );
    expect(offered.filter((o) => o.textContent === 'oncall-phone')).toHaveLength(1);
  });

  test('a rule the metric profile cannot measure says why and is not provisioned', async () => {
    inferscopeDataSource();
    // The recorded answer as a data source whose profile lacks cache metrics gives it.
    const why = 'the TorchServe profile has no cache metrics';
    const withoutCache = {
      ...catalog,
      catalog: catalog.catalog.map((r) => (r.id === 'cache-drop-p2' ? { ...r, unavailable: why } : r)),
    };
    grafanaWithoutRules({
      [`POST ${RULES}`]: (req) =>
        (req.data as { action: string }).action === 'catalog'
          ? { status: 200, body: withoutCache }
          : { status: 200, body: { ...renderAnswer, diff: { status: 'missing', rules: [] } } },
    });
    render(<AlertRules settings={{}} />);
    const cache = await screen.findByRole('row', { name: 'Cache hit rate dropped' });
    expect(cache).toHaveTextContent(`Not available: ${why}`);
    expect(cache).toHaveTextContent('Unavailable');
  });

  test('a rule whose GPU signal the fleet does not export says "not measured" and what to enable', async () => {
    inferscopeDataSource();
    const why = 'not measured here: XID errors: not measured — no XID series; keep DCGM_FI_DEV_XID_ERRORS in the counters file';
    const withoutXID = {
      ...catalog,
      catalog: catalog.catalog.map((r) => (r.id === 'xid-p1' ? { ...r, notMeasured: why } : r)),
    };
    grafanaWithoutRules({
      [`POST ${RULES}`]: (req) =>
        (req.data as { action: string }).action === 'catalog'
          ? { status: 200, body: withoutXID }
          : { status: 200, body: { ...renderAnswer, diff: { status: 'missing', rules: [] } } },
    });
    render(<AlertRules settings={{}} />);
    const xid = await screen.findByRole('row', { name: 'XID error on a GPU' });
    expect(xid).toHaveTextContent('Not measured');
    expect(xid).toHaveTextContent('DCGM_FI_DEV_XID_ERRORS');
    expect(await screen.findByRole('row', { name: 'GPU memory nearly full' })).not.toHaveTextContent('Not measured');
  });

  test('one click creates the rules; the table shows their state; a second click changes nothing', async () => {
    inferscopeDataSource();
    const requests = grafanaWithoutRules();
    render(<AlertRules settings={{ datasourceUid: 'inferscope' }} />);
    const button = await screen.findByRole('button', { name: 'Create or update the rules in Grafana' });

    await userEvent.click(button);

    const result = await screen.findByTestId(alertRulesTestIds.result);
    expect(result).toHaveTextContent(
      `Created the rule group "inferscope" with ${renderAnswer.ruleGroup.rules.length} rules in folder "Inferscope".`
    );
    await waitFor(() => expect(row('Latency far above its baseline')).toHaveTextContent('Firing'));
    expect(row('GPU memory high')).toHaveTextContent('Normal');
    const put = requests.find((r) => r.method === 'PUT');
    expect(put?.headers).toEqual({ 'X-Disable-Provenance': 'true' });

    await userEvent.click(screen.getByRole('button', { name: 'Create or update the rules in Grafana' }));

    await waitFor(() => expect(screen.getByTestId(alertRulesTestIds.result)).toHaveTextContent('No change'));
    expect(requests.filter((r) => r.method === 'PUT')).toHaveLength(1);
  });

  test('shows why the rules were not written', async () => {
    inferscopeDataSource();
    grafanaWithoutRules({
      [`PUT ${GROUP}`]: { status: 403, body: grafana.forbiddenRuleGroupWrite },
      [`DELETE ${muteTimingUrl('inferscope-record-only')}`]: { status: 204, body: '' },
    });
    render(<AlertRules settings={{}} />);

    await userEvent.click(await screen.findByRole('button', { name: 'Create or update the rules in Grafana' }));

    const result = await screen.findByTestId(alertRulesTestIds.result);
    expect(result).toHaveTextContent('The rules were not written');
    expect(result).toHaveTextContent('you need alert.provisioning:write or alert.rules.provisioning:write');
    expect(result).toHaveTextContent(
      'The mute timing "inferscope-record-only" created by this attempt was removed again'
    );
  });

  test('leaving observation mode is one click once the rules exist', async () => {
    inferscopeDataSource();
    const requests = grafanaWithoutRules();
    render(<AlertRules settings={{}} />);
    await userEvent.click(await screen.findByRole('button', { name: 'Create or update the rules in Grafana' }));
    const leave = await screen.findByRole('button', { name: 'Leave observation mode' });

    await userEvent.click(leave);

    await waitFor(() => {
      const diffCalls = requests.filter((r) => r.url === RULES && (r.data as { action: string }).action === 'diff');
      expect((diffCalls[diffCalls.length - 1].data as { params: Record<string, string> }).params.observation).toBe(
        'false'
      );
    });
  });

  test('a changed parameter asks the data source again', async () => {
    inferscopeDataSource();
    const requests = grafanaWithoutRules();
    render(<AlertRules settings={{}} />);
    await screen.findByRole('row', { name: 'Latency far above its baseline' });

    await userEvent.click(screen.getByLabelText(/^Observation mode/));

    await waitFor(() => {
      const last = requests.filter((r) => r.url === RULES).pop();
      expect((last?.data as { params: Record<string, string> }).params.observation).toBe('false');
    });
  });

  test('without an Inferscope data source it says how to add one', () => {
    installDataSources([]);
    installBackend({});
    render(<AlertRules settings={{}} />);
    expect(screen.getByText('No Inferscope data source')).toBeInTheDocument();
  });

  test('the app routes /alert-rules to the page', async () => {
    inferscopeDataSource();
    grafanaWithoutRules();
    renderApp('/alert-rules');

    expect(await screen.findByTestId(alertRulesTestIds.container)).toBeInTheDocument();
  });
});
