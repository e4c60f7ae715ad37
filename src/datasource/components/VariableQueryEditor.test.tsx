import React from 'react';
import { fireEvent, render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { lastValueFrom } from 'rxjs';
import { dateTime, DataQueryRequest } from '@grafana/data';
import { setTemplateSrv, TemplateSrv } from '@grafana/runtime';

import { installBackend } from '../../test/grafanaServices';
import { DataSource } from '../datasource';
import { InferscopeVariableSupport, VariableQuery } from '../variables';
import { VariableQueryEditor } from './VariableQueryEditor';

function renderEditor(query: VariableQuery) {
  const onChange = jest.fn();
  render(
    <VariableQueryEditor datasource={{} as DataSource} query={query} onChange={onChange} onRunQuery={jest.fn()} />
  );
  return onChange;
}

describe('VariableQueryEditor', () => {
  test('picks what to list and shows the chaining field of versions', async () => {
    const onChange = renderEditor({ refId: 'V', kind: 'model' });
    expect(screen.getByRole('radio', { name: 'Model' })).toBeChecked();
    expect(screen.queryByRole('textbox')).not.toBeInTheDocument();
    await userEvent.click(screen.getByRole('radio', { name: 'Version' }));
    expect(onChange).toHaveBeenCalledWith({ refId: 'V', kind: 'version' });
  });

  test('versions are narrowed by a model field', () => {
    const onChange = renderEditor({ refId: 'V', kind: 'version' });
    fireEvent.change(screen.getByRole('textbox', { name: /model/i }), { target: { value: '$model' } });
    expect(onChange).toHaveBeenCalledWith({ refId: 'V', kind: 'version', model: '$model' });
  });

  test('GPUs are narrowed by an instance field', () => {
    const onChange = renderEditor({ refId: 'V', kind: 'gpu', instance: '' });
    fireEvent.change(screen.getByRole('textbox', { name: /instance/i }), { target: { value: '$instance' } });
    expect(onChange).toHaveBeenCalledWith({ refId: 'V', kind: 'gpu', instance: '$instance' });
  });
});

describe('InferscopeVariableSupport', () => {
  test('asks the variables resource with the interpolated filters and the time range', async () => {
    setTemplateSrv({
      replace: (text: string, _vars: unknown, format: unknown) =>
        format === 'pipe' ? text.replace('$model', 'recsys|embedder') : text,
    } as unknown as TemplateSrv);
    const from = dateTime(1_700_000_000_000);
    const to = dateTime(1_700_003_600_000);
    const url =
      '/api/datasources/uid/ds1/resources/variables?kind=version&model=recsys%7Cembedder&from=1700000000000&to=1700003600000';
    const requests = installBackend({ [url]: { status: 200, body: { kind: 'version', values: ['v1', 'v2'] } } });

    const support = new InferscopeVariableSupport({ uid: 'ds1' });
    const res = await lastValueFrom(
      support.query({
        targets: [{ refId: 'V', kind: 'version', model: '$model' }],
        range: { from, to, raw: { from, to } },
        scopedVars: {},
      } as unknown as DataQueryRequest<VariableQuery>)
    );
    expect(res.data).toEqual([
      { text: 'v1', value: 'v1' },
      { text: 'v2', value: 'v2' },
    ]);
    expect(requests.map((r) => r.url)).toEqual([url]);
  });

  test("on a fleet a model's text names its server, its value stays the bare name", async () => {
    setTemplateSrv({ replace: (t: string) => t } as unknown as TemplateSrv);
    const url = '/api/datasources/uid/ds1/resources/variables?kind=model';
    installBackend({
      [url]: {
        status: 200,
        body: {
          kind: 'model',
          values: ['llama', 'ranker'],
          options: [
            { text: 'llama (vllm)', value: 'llama' },
            { text: 'ranker (custom)', value: 'ranker' },
          ],
        },
      },
    });
    const support = new InferscopeVariableSupport({ uid: 'ds1' });
    const res = await lastValueFrom(
      support.query({
        targets: [{ refId: 'V', kind: 'model' }],
        scopedVars: {},
      } as unknown as DataQueryRequest<VariableQuery>)
    );
    expect(res.data).toEqual([
      { text: 'llama (vllm)', value: 'llama' },
      { text: 'ranker (custom)', value: 'ranker' },
    ]);
  });

  test('a failing backend is an error, not an empty list', async () => {
    setTemplateSrv({ replace: (t: string) => t } as unknown as TemplateSrv);
    installBackend({});
    const support = new InferscopeVariableSupport({ uid: 'ds1' });
    await expect(
      lastValueFrom(
        support.query({
          targets: [{ refId: 'V', kind: 'model' }],
          scopedVars: {},
        } as unknown as DataQueryRequest<VariableQuery>)
      )
    ).rejects.toBeDefined();
  });
});
