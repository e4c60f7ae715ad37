import React from 'react';
import { MemoryRouter } from 'react-router-dom';
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { locationUtil } from '@grafana/data';
import { BackendSrvRequest } from '@grafana/runtime';

import { toRFC3339, triageUrl } from '../../api/triage';
import { DATASOURCE_TYPE } from '../../constants';
import { dataSourceSettings, installBackend, installDataSources, Reply } from '../../test/grafanaServices';
import Triage, { answerSubject, triageTestIds } from './Triage';
import { formatChange, formatValue } from './format';
import answer from './testdata/triage.json';
import nodeAnswer from './testdata/triage-node.json';

// The page against the data source's recorded triage answer (testdata/triage.json, written by
// the Go data source's test on the test bed); expected figures are read from it.

const URL = triageUrl('inferscope');

function renderAt(path: string, routes: Record<string, Reply> = { [URL]: { status: 200, body: answer } }) {
  installDataSources([dataSourceSettings({ uid: 'inferscope', name: 'Inferscope', type: DATASOURCE_TYPE })]);
  const requests = installBackend(routes);
  render(
    <MemoryRouter initialEntries={[path]} future={{ v7_startTransition: true, v7_relativeSplatPath: true }}>
      <Triage settings={{}} />
    </MemoryRouter>
  );
  return requests;
}

const alertLink = (from: number, to: number) =>
  `/triage?orgId=1&from=${from}&to=${to}&model=${encodeURIComponent(answer.model)}&version=${encodeURIComponent(answer.version)}&instance=${encodeURIComponent(answer.instance)}`;

const start = Date.parse(answer.window.start);
const end = Date.parse(answer.window.end);
// The window as the page writes it (RFC 3339, UTC, whole seconds).
const startText = toRFC3339(new Date(start));
const endText = toRFC3339(new Date(end));

describe('Triage page', () => {
  afterEach(() =>
    locationUtil.initialize({
      config: { appSubUrl: '' } as never,
      getTimeRangeForUrl: () => ({}) as never,
      getVariablesUrlParams: () => ({}),
    })
  );

  test('an alert link prefills the form and runs the triage at once', async () => {
    const requests = renderAt(alertLink(start, end));

    expect(screen.getByLabelText(/^Model/)).toHaveValue(answer.model);
    expect(screen.getByLabelText(/^Version/)).toHaveValue(answer.version);
    expect(screen.getByLabelText(/^From/)).toHaveValue(startText);
    expect(screen.getByLabelText(/^To/)).toHaveValue(endText);
    expect(await screen.findByTestId(triageTestIds.verdict)).toHaveTextContent(answer.summary);
    const params: Record<string, string> = { model: answer.model, from: startText, to: endText };
    if (answer.version) {
      params.version = answer.version;
    }
    if (answer.instance) {
      params.instance = answer.instance;
    }
    expect(requests.map((r: BackendSrvRequest) => [r.method, r.url, r.params])).toEqual([['GET', URL, params]]);
  });

  test('shows the verdict, the causes ranked with their evidence, and the five steps', async () => {
    renderAt(alertLink(start, end));

    const verdict = await screen.findByTestId(triageTestIds.verdict);
    if (answer.verdict === 'diagnosed') {
      expect(verdict).toHaveTextContent(`Diagnosis: ${answer.causes[0].title}`);
    }
    const cards = screen
      .getAllByRole('region')
      .filter((el) => answer.causes.some((c) => c.title === el.getAttribute('aria-label')));
    expect(cards.map((c) => c.getAttribute('aria-label'))).toEqual(answer.causes.map((c) => c.title));
    for (const cause of answer.causes) {
      const card = screen.getByRole('region', { name: cause.title });
      expect(within(card).getByRole('meter', { name: 'Score' })).toHaveAttribute('aria-valuenow', String(cause.score));
      expect(card).toHaveTextContent(cause.next);
      if (cause.evidence.length > 0) {
        const rows = within(within(card).getByRole('table')).getAllByRole('row').slice(1);
        expect(rows).toHaveLength(cause.evidence.length);
        cause.evidence.forEach((e, i) => {
          expect(rows[i]).toHaveTextContent(e.what);
          expect(rows[i]).toHaveTextContent(formatValue(e.before, e.unit));
          expect(rows[i]).toHaveTextContent(formatValue(e.now, e.unit));
          expect(rows[i]).toHaveTextContent(formatChange(e.change));
        });
      }
      const hrefs = within(card)
        .queryAllByRole('link')
        .map((a) => a.getAttribute('href'));
      expect(hrefs).toEqual(cause.links.map((l) => l.url));
    }
    const steps = within(screen.getByRole('list', { name: 'Triage steps' })).getAllByRole('listitem');
    expect(steps).toHaveLength(answer.steps.length);
    answer.steps.forEach((st, i) => {
      expect(steps[i]).toHaveTextContent(`${st.step}. ${st.title}`);
      expect(steps[i]).toHaveTextContent(st.finding);
    });
  });

  test('dashboard links work under a Grafana sub-path', async () => {
    locationUtil.initialize({
      config: { appSubUrl: '/grafana' } as never,
      getTimeRangeForUrl: () => ({}) as never,
      getVariablesUrlParams: () => ({}),
    });
    renderAt(alertLink(start, end));
    const withLinks = answer.causes.find((c) => c.links.length > 0);
    if (!withLinks) {
      return;
    }
    const card = await screen.findByRole('region', { name: withLinks.title });
    expect(within(card).getByRole('link', { name: withLinks.links[0].title })).toHaveAttribute(
      'href',
      `/grafana${withLinks.links[0].url}`
    );
  });

  test('relative times from a link are resolved when the triage runs', async () => {
    const requests = renderAt('/triage?model=recsys-ranker&from=now-15m&to=now');
    expect(screen.getByLabelText(/^From/)).toHaveValue('now-15m');
    await screen.findByTestId(triageTestIds.verdict);
    const p = requests[0].params as Record<string, string>;
    expect(Date.parse(p.to) - Date.parse(p.from)).toBe(15 * 60 * 1000);
    expect(p).not.toHaveProperty('version');
  });

  test('without a model in the URL it waits for the form; a missing model is named', async () => {
    const requests = renderAt('/triage');
    expect(screen.getByLabelText(/^From/)).toHaveValue('now-15m');
    expect(screen.getByLabelText(/^To/)).toHaveValue('now');

    await userEvent.click(screen.getByRole('button', { name: 'Run triage' }));
    expect(screen.getByText('model: name the model to triage, or a node')).toBeInTheDocument();
    expect(requests).toHaveLength(0);

    await userEvent.type(screen.getByLabelText(/^Model/), answer.model);
    await userEvent.clear(screen.getByLabelText(/^From/));
    await userEvent.type(screen.getByLabelText(/^From/), 'yesterday');
    await userEvent.click(screen.getByRole('button', { name: 'Run triage' }));
    expect(screen.getByText(/^from: "yesterday" is not a time/)).toBeInTheDocument();
    expect(requests).toHaveLength(0);

    await userEvent.clear(screen.getByLabelText(/^From/));
    await userEvent.type(screen.getByLabelText(/^From/), 'now-1h');
    await userEvent.click(screen.getByRole('button', { name: 'Run triage' }));
    expect(await screen.findByTestId(triageTestIds.verdict)).toBeInTheDocument();
    expect((requests[0].params as Record<string, string>).model).toBe(answer.model);
  });

  test('Prometheus unreachable: 502 with the data source message', async () => {
    const message = 'Prometheus at http://prometheus:9090: dial tcp 10.0.0.9:9090: connect: connection refused';
    renderAt(alertLink(start, end), { [URL]: { status: 502, body: { error: message } } });

    const error = await screen.findByTestId(triageTestIds.error);
    expect(error).toHaveTextContent('Prometheus could not be read');
    expect(error).toHaveTextContent(message);
    expect(error).toHaveTextContent(/reachable from the Grafana server/);
  });

  test('bad input: 400 with the field the data source names', async () => {
    const message = 'model: no series for model "nope"';
    renderAt('/triage?model=nope', { [URL]: { status: 400, body: { error: message } } });

    const error = await screen.findByTestId(triageTestIds.error);
    expect(error).toHaveTextContent('The data source refused the request');
    expect(error).toHaveTextContent(message);
  });

  // A GPU alert's link names a node and a GPU, no model (pkg/alerting triageLink); the answer is
  // the data source's for the test bed's GPU idle incident (testdata/triage-node.json).
  const gpuAlertLink = (from: number, to: number) =>
    `/triage?orgId=1&from=${from}&to=${to}&node=${encodeURIComponent(nodeAnswer.node)}&gpu=${encodeURIComponent(nodeAnswer.gpu)}`;
  const nodeStart = Date.parse(nodeAnswer.window.start);
  const nodeEnd = Date.parse(nodeAnswer.window.end);

  test('a GPU alert link triages the node at once, with the model optional', async () => {
    const requests = renderAt(gpuAlertLink(nodeStart, nodeEnd), { [URL]: { status: 200, body: nodeAnswer } });

    expect(screen.getByLabelText(/^Node/)).toHaveValue(nodeAnswer.node);
    expect(screen.getByLabelText(/^GPU/)).toHaveValue(nodeAnswer.gpu);
    expect(screen.getByLabelText(/^Model/)).toHaveValue('');
    expect(screen.getByLabelText(/^Model/)).not.toBeRequired();
    expect(screen.getByTestId(triageTestIds.nodeHint)).toHaveTextContent(
      `GPU ${nodeAnswer.gpu} of node ${nodeAnswer.node}: every model served on the node is triaged`
    );

    const verdict = await screen.findByTestId(triageTestIds.verdict);
    expect(verdict).toHaveTextContent(nodeAnswer.summary);
    expect(verdict).toHaveTextContent(
      `Node ${nodeAnswer.node}, GPU ${nodeAnswer.gpu} (${nodeAnswer.models.join(', ')})`
    );
    expect(requests.map((r: BackendSrvRequest) => [r.method, r.url, r.params])).toEqual([
      [
        'GET',
        URL,
        {
          node: nodeAnswer.node,
          gpu: nodeAnswer.gpu,
          from: toRFC3339(new Date(nodeStart)),
          to: toRFC3339(new Date(nodeEnd)),
        },
      ],
    ]);
    // The first cause names its model: the GPU is not a model, the answer says which one it serves.
    const top = nodeAnswer.causes[0];
    const card = screen.getByRole('region', { name: top.title });
    expect(card).toHaveTextContent(top.model);
    expect(card).toHaveTextContent(top.summary);
    expect(within(card).getByRole('meter', { name: 'Score' })).toHaveAttribute('aria-valuenow', String(top.score));
    const gpuStep = within(screen.getByRole('list', { name: 'Triage steps' })).getAllByRole('listitem')[1];
    expect(gpuStep).toHaveTextContent(nodeAnswer.steps[1].finding);
  });

  test('a node form: a GPU needs its node, a version needs a model', async () => {
    const requests = renderAt('/triage');
    await userEvent.type(screen.getByLabelText(/^GPU/), '6');
    await userEvent.click(screen.getByRole('button', { name: 'Run triage' }));
    expect(screen.getByText('gpu: name the node the GPU is on')).toBeInTheDocument();

    await userEvent.type(screen.getByLabelText(/^Node/), 'node-a');
    await userEvent.type(screen.getByLabelText(/^Version/), 'v1.4.0');
    await userEvent.click(screen.getByRole('button', { name: 'Run triage' }));
    expect(screen.getByText(/^version: needs a model/)).toBeInTheDocument();
    expect(requests).toHaveLength(0);

    await userEvent.clear(screen.getByLabelText(/^Version/));
    await userEvent.click(screen.getByRole('button', { name: 'Run triage' }));
    await screen.findByTestId(triageTestIds.verdict);
    expect(requests[0].params).toMatchObject({ node: 'node-a', gpu: '6' });
    expect(requests[0].params).not.toHaveProperty('model');
  });

  test('the subject line names the model, or the node with its GPU and models', () => {
    expect(answerSubject(answer as never)).toBe(
      `${[answer.model, answer.version].filter(Boolean).join(' ')} on ${answer.instance || 'all instances'}`
    );
    expect(answerSubject({ ...nodeAnswer, models: [] } as never)).toBe(
      `Node ${nodeAnswer.node}, GPU ${nodeAnswer.gpu} (no model served)`
    );
  });

  test('shows where the time went: each segment before, now and its share, the lead marked, and what was not measured', async () => {
    renderAt(alertLink(start, end));
    await screen.findByTestId(triageTestIds.verdict);
    const measured = answer.segments.filter((seg) => seg.before !== null || seg.now !== null);
    expect(measured.length).toBeGreaterThan(0);
    const rows = within(screen.getByRole('table', { name: 'Latency segments' }))
      .getAllByRole('row')
      .slice(1);
    expect(rows).toHaveLength(measured.length);
    measured.forEach((seg, i) => {
      expect(rows[i]).toHaveTextContent(seg.segment);
      expect(rows[i]).toHaveTextContent(formatValue(seg.before, 's'));
      expect(rows[i]).toHaveTextContent(formatValue(seg.now, 's'));
      if (seg.share !== null) {
        expect(rows[i]).toHaveTextContent(`${(seg.share * 100).toFixed(0)} %`);
      }
    });
    expect(
      screen.getByText(new RegExp(`the ${answer.lead} segment explains most of the latency change`))
    ).toBeInTheDocument();
    const notMeasured = within(screen.getByRole('list', { name: 'Not measured' })).getAllByRole('listitem');
    expect(notMeasured.map((li) => li.textContent)).toEqual(answer.notMeasured);
  });

  test('new cause ids render with their titles, and a long window lists its change points', async () => {
    const long = {
      ...answer,
      causes: [
        {
          ...answer.causes[0],
          id: 'kv_cache',
          title: 'KV-cache exhaustion (usage near full, requests preempted)',
          window: answer.window,
        },
        {
          ...answer.causes[0],
          id: 'compute',
          title: 'Compute slowed (cause not among the signals measured here)',
          window: answer.window,
        },
      ],
      episodes: [
        {
          window: answer.window,
          peak: 3.4,
          where: 'recsys-ranker v1.4.0 on node-b:8000',
          verdict: 'diagnosed',
          summary: 'the KV cache of node-b:8000 is near full',
          confidence: 'high',
          causes: [],
        },
      ],
    };
    renderAt(alertLink(start, end), { [URL]: { status: 200, body: long } });
    await screen.findByTestId(triageTestIds.verdict);
    expect(
      screen.getByRole('region', { name: 'KV-cache exhaustion (usage near full, requests preempted)' })
    ).toBeInTheDocument();
    expect(
      screen.getByRole('region', { name: 'Compute slowed (cause not among the signals measured here)' })
    ).toBeInTheDocument();
    const eps = within(screen.getByRole('list', { name: 'Change points' })).getAllByRole('listitem');
    expect(eps).toHaveLength(1);
    expect(eps[0]).toHaveTextContent(
      'recsys-ranker v1.4.0 on node-b:8000, ×3.4 its level · diagnosed (high confidence)'
    );
  });
  test('a change point inside a short window says where it is and how much of the window is compared', async () => {
    const narrowed = {
      ...answer,
      change: {
        at: '2026-11-23T04:11:00Z',
        where: 'recsys-ranker v1.4.0 on node-b:8000',
        level: 0.025,
        now: 0.09,
        asked: { start: '2026-11-23T04:00:00Z', end: '2026-11-23T04:15:00Z', duration: '15m' },
        covers: 0.3333,
        points: 4,
      },
    };
    renderAt(alertLink(start, end), { [URL]: { status: 200, body: narrowed } });
    expect(await screen.findByTestId(triageTestIds.change)).toHaveTextContent(
      'Change point at 2026-11-23 04:11:00 UTC in recsys-ranker v1.4.0 on node-b:8000: the time per request stepped from 25 ms to 90 ms. Only the part after it (33 % of the 15m asked about) is compared.'
    );
  });

  test('a change one point old says it rests on one interval of requests', async () => {
    const change = {
      at: '2026-11-23T04:15:00Z',
      where: 'recsys-ranker v1.4.0 on node-b:8000',
      level: 0.025,
      now: 0.09,
      asked: { start: '2026-11-23T04:00:00Z', end: '2026-11-23T04:15:00Z', duration: '15m' },
      covers: 0.0667,
      points: 1,
      lastInterval: true,
    };
    renderAt(alertLink(start, end), { [URL]: { status: 200, body: { ...answer, change } } });
    expect(await screen.findByTestId(triageTestIds.change)).toHaveTextContent(
      'is compared. Each rate after it is read over its last scrape interval, so no point mixes in the minutes before the change. The change is one point old: one interval of requests, so ask again in a few minutes to confirm.'
    );
  });

  test('a change point seen in the P95 says so', async () => {
    const narrowed = {
      ...answer,
      change: {
        at: '2026-11-23T04:11:00Z',
        where: 'recsys-ranker v1.4.0 on node-b:8000',
        level: 0.04,
        now: 0.08,
        signal: 'P95',
        asked: { start: '2026-11-23T04:00:00Z', end: '2026-11-23T04:15:00Z', duration: '15m' },
        covers: 0.3333,
        points: 4,
      },
    };
    renderAt(alertLink(start, end), { [URL]: { status: 200, body: narrowed } });
    expect(await screen.findByTestId(triageTestIds.change)).toHaveTextContent(
      'in recsys-ranker v1.4.0 on node-b:8000: the P95 stepped from 40 ms to 80 ms.'
    );
  });

  test('an answer without a change point, or with a malformed one, shows none', async () => {
    renderAt(alertLink(start, end), { [URL]: { status: 200, body: { ...answer, change: { at: 7 } } } });
    await screen.findByTestId(triageTestIds.verdict);
    expect(screen.queryByTestId(triageTestIds.change)).not.toBeInTheDocument();
  });
});
