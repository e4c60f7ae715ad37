import React from 'react';
import { MemoryRouter } from 'react-router-dom';
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';

import { gateUrl, GateCheck } from '../../api/gate';
import { DATASOURCE_TYPE } from '../../constants';
import { dataSourceSettings, installBackend, installDataSources, Reply } from '../../test/grafanaServices';
import { formatChange } from '../Triage/format';
import { checkResult, formatCheckValue } from './ChecksTable';
import Gate, { gateTestIds } from './Gate';
import fail from './testdata/gate-fail.json';
import pass from './testdata/gate-pass.json';

// The page against the data source's recorded gate answers (testdata/gate-*.json, checked
// against the Go data source on the test bed by TestGateRecordedAnswersAreCurrent).

const URL = gateUrl('inferscope');

function renderGate(path: string, reply: Reply) {
  installDataSources([dataSourceSettings({ uid: 'inferscope', name: 'Inferscope', type: DATASOURCE_TYPE })]);
  const requests = installBackend({ [URL]: reply });
  render(
    <MemoryRouter initialEntries={[path]} future={{ v7_startTransition: true, v7_relativeSplatPath: true }}>
      <Gate settings={{}} />
    </MemoryRouter>
  );
  return requests;
}

async function fillAndRun(model: string, baseline: string, canary: string) {
  await userEvent.type(screen.getByLabelText(/^Model/), model);
  await userEvent.type(screen.getByLabelText(/^Baseline version/), baseline);
  await userEvent.type(screen.getByLabelText(/^Canary version/), canary);
  await userEvent.click(screen.getByRole('button', { name: 'Run the gate' }));
}

function expectChecks(checks: GateCheck[]) {
  const table = screen.getByRole('table', { name: 'Gate checks' });
  for (const c of checks) {
    const row = within(table).getByRole('row', { name: c.name });
    expect(row).toHaveTextContent(formatCheckValue(c.baseline, c.unit));
    expect(row).toHaveTextContent(formatCheckValue(c.canary, c.unit));
    expect(row).toHaveTextContent(formatChange(c.change));
    expect(row).toHaveTextContent(checkResult(c).text);
    expect(row).toHaveTextContent(c.reason);
  }
}

describe('Release gate page', () => {
  test('the 15 %-slower canary fails, with the failing checks marked', async () => {
    const requests = renderGate('/gate', { status: 200, body: fail });

    await fillAndRun(fail.model, fail.baseline, fail.canary);

    const verdict = await screen.findByTestId(gateTestIds.verdict);
    expect(verdict).toHaveTextContent('Fail: the canary is worse than allowed');
    expect(verdict).toHaveTextContent(fail.reason);
    expectChecks(fail.checks as GateCheck[]);
    const failed = fail.checks.filter((c) => c.passed === false).map((c) => c.name);
    expect(failed.length).toBeGreaterThan(0);
    for (const name of failed) {
      expect(screen.getByRole('row', { name })).toHaveTextContent('FAIL');
    }
    expect(requests[0].params).toEqual({
      model: fail.model,
      baseline: fail.baseline,
      canary: fail.canary,
      window: '2h',
      latencyThreshold: '10%',
      memoryThreshold: '5%',
      statusCodes: 'false',
    });
  });

  test('the identical canary passes; the URL prefills the form', async () => {
    const requests = renderGate(
      `/gate?model=${pass.model}&baseline=${pass.baseline}&canary=${pass.canary}&window=${pass.window.duration}`,
      { status: 200, body: pass }
    );
    expect(screen.getByLabelText(/^Canary version/)).toHaveValue(pass.canary);

    await userEvent.click(screen.getByRole('button', { name: 'Run the gate' }));

    const verdict = await screen.findByTestId(gateTestIds.verdict);
    expect(verdict).toHaveTextContent('Pass: the canary may take the traffic');
    expect(verdict).toHaveTextContent(pass.reason);
    expectChecks(pass.checks as GateCheck[]);
    expect(screen.queryByText('FAIL')).not.toBeInTheDocument();
    expect((requests[0].params as Record<string, string>).window).toBe(pass.window.duration);
  });

  test('insufficient data is its own verdict, never a pass', async () => {
    const body = {
      ...fail,
      verdict: 'insufficient_data',
      reason: 'too little traffic: the canary served 12 requests, fewer than 500',
    };
    renderGate(`/gate?model=m&baseline=a&canary=b`, { status: 200, body });
    await userEvent.click(screen.getByRole('button', { name: 'Run the gate' }));
    expect(await screen.findByTestId(gateTestIds.verdict)).toHaveTextContent('Insufficient data');
  });

  test('the pipeline box shows the URL for Argo Rollouts and Flagger', async () => {
    renderGate(`/gate?model=${fail.model}&baseline=${fail.baseline}&canary=${fail.canary}`, {
      status: 200,
      body: fail,
    });
    const argo = screen.getByLabelText('Argo Rollouts');
    expect(argo).toHaveTextContent(
      `/api/datasources/uid/inferscope/resources/gate?model=${fail.model}&baseline=${fail.baseline}&canary=${fail.canary}&window=2h&latencyThreshold=10%25&memoryThreshold=5%25&statusCodes=false`
    );
    expect(argo).toHaveTextContent('successCondition: result.verdict == "pass"');
    expect(screen.getByLabelText('Flagger')).toHaveTextContent('curl --fail');
    expect(screen.getByLabelText('Flagger')).not.toHaveTextContent('statusCodes');
  });

  test('missing versions are named before anything is asked', async () => {
    const requests = renderGate('/gate', { status: 200, body: fail });
    await userEvent.type(screen.getByLabelText(/^Model/), 'recsys-ranker');
    await userEvent.click(screen.getByRole('button', { name: 'Run the gate' }));
    expect(screen.getByText('baseline: name the current version')).toBeInTheDocument();
    expect(screen.getByText('canary: name the new version')).toBeInTheDocument();
    expect(requests).toHaveLength(0);
  });

  test.each([
    [400, 'window: "forever" is not a Prometheus duration', 'The data source refused the request'],
    [502, 'Prometheus at http://prometheus:9090: connection refused', 'Prometheus could not be read'],
  ])('HTTP %d shows its message', async (status, message, title) => {
    renderGate('/gate?model=m&baseline=a&canary=b', { status, body: { error: message } });
    await userEvent.click(screen.getByRole('button', { name: 'Run the gate' }));
    const error = await screen.findByTestId(gateTestIds.error);
    expect(error).toHaveTextContent(title);
    expect(error).toHaveTextContent(message);
  });
});
