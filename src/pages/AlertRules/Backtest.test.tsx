import React from 'react';
import { Subject, switchMap, take } from 'rxjs';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { BackendSrvRequest, getBackendSrv } from '@grafana/runtime';

import { rulesUrl } from '../../api/alerting';
import { backtestUrl, BacktestAnswer, BacktestRequest } from '../../api/backtest';
import { CONTACT_POINTS_URL, RULE_STATES_URL } from '../../api/alertingGrafana';
import { DATASOURCE_TYPE } from '../../constants';
import { dataSourceSettings, installBackend, installDataSources, Reply } from '../../test/grafanaServices';
import { formatSeconds, formatTime } from '../Triage/format';
import AlertRules from './AlertRules';
import recorded from './testdata/backtest.json';
import catalog from './testdata/rules-catalog.json';

// The Backtest action against the data source's recorded answer (testdata/backtest.json,
// written by the Go data source's test on the test bed); the figures are read from it.

const answer = recorded as unknown as BacktestAnswer;
const RULES = rulesUrl('inferscope');
const BACKTEST = backtestUrl('inferscope');
const STATES = `${RULE_STATES_URL}?folder_uid=${catalog.folder.uid}&rule_group=${catalog.group}`;
const DAY = 86_400_000;

function page(backtest: Reply | ((r: BackendSrvRequest) => Reply) = { status: 200, body: answer }) {
  installDataSources([dataSourceSettings({ uid: 'inferscope', name: 'Inferscope', type: DATASOURCE_TYPE })]);
  const requests = installBackend({
    [`POST ${RULES}`]: { status: 200, body: catalog },
    [CONTACT_POINTS_URL]: { status: 200, body: [] },
    [STATES]: { status: 200, body: { status: 'success', data: { groups: [] } } },
    [`POST ${BACKTEST}`]: backtest,
  });
  render(<AlertRules settings={{}} />);
  return requests;
}

function row(title: string) {
  return within(screen.getByRole('table', { name: 'Alert rules' })).getByRole('row', { name: title });
}

const titleOf = (id: string) => catalog.catalog.find((r) => r.id === id)?.title ?? id;
const backtestCalls = (requests: BackendSrvRequest[]) => requests.filter((r) => r.url === BACKTEST);

async function runBacktest() {
  await userEvent.click(await screen.findByRole('button', { name: 'Backtest' }));
}

describe('Backtest on the Alert rules page', () => {
  test('shows beside each rule how often and how long it would have fired', async () => {
    const requests = page();
    await screen.findByRole('row', { name: titleOf('latency-p0') });
    expect(screen.queryByRole('columnheader', { name: 'Backtest' })).not.toBeInTheDocument();

    await runBacktest();

    await screen.findByTestId('data-testid backtest-summary');
    expect(screen.getByRole('columnheader', { name: 'Backtest' })).toBeInTheDocument();
    for (const r of answer.rules) {
      const cells = within(row(titleOf(r.id))).getAllByRole('cell');
      const cell = cells[cells.length - 1];
      if (r.unavailable) {
        expect(cell).toHaveTextContent('not available');
      } else if (r.error) {
        expect(cell).toHaveTextContent(r.error);
      } else if (r.fired === 0) {
        expect(cell).toHaveTextContent('Never fired');
      } else {
        expect(cell).toHaveTextContent(`Fired ${r.fired}×`);
        expect(cell).toHaveTextContent(`${formatSeconds(r.firingSeconds)} firing`);
      }
    }
    const firing = answer.rules.filter((r) => r.fired > 0);
    expect(screen.getByTestId('data-testid backtest-summary')).toHaveTextContent(
      `${firing.length} of ${answer.rules.length} rules would have fired`
    );

    // The same parameters the page sends to the rules resource, and the last 7 days.
    const rulesCall = requests.filter((r) => r.url === RULES).pop();
    const body = backtestCalls(requests)[0].data as BacktestRequest;
    expect(body.params).toEqual((rulesCall?.data as { params: unknown }).params);
    expect(Date.parse(body.to) - Date.parse(body.from)).toBe(7 * DAY);
    expect(body.rules).toBeUndefined();
  });

  test('a rule expands to its episodes', async () => {
    page();
    await runBacktest();
    await screen.findByTestId('data-testid backtest-summary');
    const r = answer.rules.find((x) => x.fired > 0 && !x.error);
    if (!r) {
      return;
    }
    const title = titleOf(r.id);

    await userEvent.click(within(row(title)).getByRole('button', { name: /^Show \d+ episodes?$/ }));

    const table = screen.getByRole('table', { name: `Episodes: ${r.title}` });
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows).toHaveLength(r.episodes.length);
    r.episodes.forEach((e, i) => {
      expect(rows[i]).toHaveTextContent(formatTime(e.start));
      expect(rows[i]).toHaveTextContent(formatSeconds(e.seconds));
      for (const [k, v] of Object.entries(e.labels)) {
        expect(rows[i]).toHaveTextContent(`${k}=${v}`);
      }
    });
    await userEvent.click(within(row(title)).getByRole('button', { name: 'Hide episodes' }));
    expect(screen.queryByRole('table', { name: `Episodes: ${r.title}` })).not.toBeInTheDocument();
  });

  test('episodes overlapping a warm-up or a deploy say so; an open one says it still fires', async () => {
    const r = answer.rules.find((x) => x.fired > 0) ?? answer.rules[0];
    const warmup = answer.warmups[0] ?? {
      kind: 'warmup',
      instance: 'node-c:8000',
      start: answer.from,
      end: answer.from,
    };
    const deploy = {
      kind: 'deploy',
      instance: 'node-c:8000',
      model: 'recsys-ranker',
      version: 'v1.5.0',
      start: answer.from,
      end: answer.from,
    };
    const episode = {
      labels: { model: 'recsys-ranker' },
      start: answer.from,
      end: answer.to,
      open: true,
      seconds: 600,
      peak: 3.4,
      overlaps: [warmup, deploy],
    };
    const body = {
      ...answer,
      rules: answer.rules.map((x) => (x.id === r.id ? { ...x, error: '', fired: 1, episodes: [episode] } : x)),
    };
    page({ status: 200, body });
    await runBacktest();
    await userEvent.click(await within(row(titleOf(r.id))).findByRole('button', { name: 'Show 1 episode' }));

    const ep = within(screen.getByRole('table', { name: `Episodes: ${r.title}` })).getByRole('row', {
      name: 'Episode 1',
    });
    expect(ep).toHaveTextContent(`warm-up on ${warmup.instance}`);
    expect(ep).toHaveTextContent('deploy recsys-ranker v1.5.0 on node-c:8000');
    expect(ep).toHaveTextContent('still firing at the end');
  });

  test('a rule that could not be backtested shows why; the others still show', async () => {
    const [broken, other] = answer.rules;
    const why = 'Prometheus: query timed out in expression evaluation';
    page({
      status: 200,
      body: { ...answer, rules: answer.rules.map((x) => (x.id === broken.id ? { ...x, error: why } : x)) },
    });
    await runBacktest();

    await waitFor(() => expect(row(titleOf(broken.id))).toHaveTextContent(`Backtest failed: ${why}`));
    expect(row(titleOf(other.id))).not.toHaveTextContent('Backtest failed');
  });

  test('a spinner shows while it runs', async () => {
    const requests = page();
    const release = new Subject<void>();
    const srv = getBackendSrv();
    const fetch = srv.fetch.bind(srv);
    srv.fetch = ((req: BackendSrvRequest) =>
      req.url === BACKTEST
        ? release.pipe(
            take(1),
            switchMap(() => fetch(req))
          )
        : fetch(req)) as typeof srv.fetch;
    await runBacktest();

    expect(screen.getByRole('button', { name: 'Backtesting…' })).toBeDisabled();
    expect(within(row(titleOf(answer.rules[0].id))).getByLabelText('Backtesting')).toBeInTheDocument();

    release.next();
    await screen.findByTestId('data-testid backtest-summary');
    expect(screen.getByRole('button', { name: 'Backtest' })).toBeEnabled();
    expect(backtestCalls(requests)).toHaveLength(1);
  });

  test('a shorter history asks for it', async () => {
    const requests = page();
    await userEvent.click(await screen.findByLabelText('Last day'));
    await runBacktest();
    await screen.findByTestId('data-testid backtest-summary');
    const body = backtestCalls(requests)[0].data as BacktestRequest;
    expect(Date.parse(body.to) - Date.parse(body.from)).toBe(DAY);
  });

  test('a typed time range is checked and sent as RFC 3339', async () => {
    const requests = page();
    await userEvent.click(await screen.findByLabelText('Time range'));
    await userEvent.clear(screen.getByLabelText('From'));
    await userEvent.type(screen.getByLabelText('From'), 'last week');
    await runBacktest();
    expect(screen.getByText(/^from: not a time/)).toBeInTheDocument();
    expect(backtestCalls(requests)).toHaveLength(0);

    await userEvent.clear(screen.getByLabelText('From'));
    await userEvent.type(screen.getByLabelText('From'), answer.from);
    await userEvent.clear(screen.getByLabelText('To'));
    await userEvent.type(screen.getByLabelText('To'), answer.to);
    await runBacktest();
    await screen.findByTestId('data-testid backtest-summary');
    expect(backtestCalls(requests)[0].data).toMatchObject({ from: answer.from, to: answer.to });
  });

  test('Prometheus failing: the whole backtest says why', async () => {
    page({ status: 502, body: { error: 'Prometheus at http://prometheus:9090: connection refused' } });
    await runBacktest();
    const alert = await screen.findByText('The backtest did not run');
    expect(alert.closest('[role="alert"]') ?? alert.parentElement).toHaveTextContent(
      'the data source answered HTTP 502: Prometheus at http://prometheus:9090: connection refused'
    );
  });

  test('changing a parameter marks the figures as stale', async () => {
    page();
    await runBacktest();
    await screen.findByTestId('data-testid backtest-summary');

    await userEvent.click(screen.getByLabelText(/^Observation mode/));

    expect(await screen.findByText('The parameters changed since this backtest')).toBeInTheDocument();
  });
});
