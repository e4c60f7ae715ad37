import React from 'react';
import { fireEvent, render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';

import { installBackend } from '../../test/grafanaServices';
import { DataSource } from '../datasource';
import { QUERY_TYPE_NAMES } from '../queryTypes.gen';
import { InferscopeQuery } from '../types';
import { QueryEditor, parseOption } from './QueryEditor';
import { QUERY_TYPES } from './queryTypes';

const VARS = '/api/datasources/uid/ds1/resources/variables';

function renderEditor(query: InferscopeQuery) {
  const onChange = jest.fn();
  const onRunQuery = jest.fn();
  const datasource = { uid: 'ds1' } as DataSource;
  render(<QueryEditor datasource={datasource} query={query} onChange={onChange} onRunQuery={onRunQuery} />);
  return { onChange, onRunQuery };
}

describe('QueryEditor: every query type', () => {
  test('the picker offers every type the backend serves', () => {
    renderEditor({ refId: 'A', queryType: 'latency' });
    // QUERY_TYPE_NAMES is generated from the Go registry; a Go test fails when it is stale.
    expect(QUERY_TYPES.map((t) => t.value)).toEqual([...QUERY_TYPE_NAMES]);
    for (const t of QUERY_TYPES) {
      expect(screen.getByRole('radio', { name: t.label })).toBeInTheDocument();
    }
  });

  test.each(QUERY_TYPES.map((t) => [t.value, t] as const))(
    '%s shows its description, filters and options',
    (value, spec) => {
      renderEditor({ refId: 'A', queryType: value });
      expect(screen.getByRole('radio', { name: spec.label })).toBeChecked();
      expect(screen.getByTestId('inferscope-query-type-description')).toHaveTextContent(spec.description);
      for (const f of ['Model', 'Version', 'Instance', 'GPU'] as const) {
        const shown = spec.filters.includes(f.toLowerCase() as never);
        expect(screen.queryByRole('combobox', { name: new RegExp(`^${f}\\b`) }) !== null).toBe(shown);
      }
      for (const opt of spec.options) {
        expect(screen.getAllByText(opt.label).length).toBeGreaterThan(0);
      }
    }
  );

  test('switching type keeps the filters and runs the query', async () => {
    const query: InferscopeQuery = { refId: 'A', queryType: 'latency', model: '$model' };
    const { onChange, onRunQuery } = renderEditor(query);
    await userEvent.click(screen.getByRole('radio', { name: 'Jitter' }));
    expect(onChange).toHaveBeenCalledWith({ ...query, queryType: 'jitter' });
    expect(onRunQuery).toHaveBeenCalled();
  });

  test('a number option is sent as a number, a variable as typed, empty removes it', () => {
    const query = { refId: 'A', queryType: 'jitter', threshold: 4 } as InferscopeQuery;
    const { onChange } = renderEditor(query);
    const input = screen.getByPlaceholderText('5');
    expect(input).toHaveValue('4');
    fireEvent.change(input, { target: { value: '6' } });
    expect(onChange).toHaveBeenLastCalledWith({ ...query, threshold: 6 });
    fireEvent.change(input, { target: { value: '$limit' } });
    expect(onChange).toHaveBeenLastCalledWith({ ...query, threshold: '$limit' });
    fireEvent.change(input, { target: { value: '' } });
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', queryType: 'jitter' });
  });

  test('latency quantiles are a list of numbers', () => {
    const query: InferscopeQuery = { refId: 'A', queryType: 'latency' };
    const { onChange } = renderEditor(query);
    fireEvent.change(screen.getByPlaceholderText('0.5, 0.95, 0.99'), { target: { value: '0.9, 0.999' } });
    expect(onChange).toHaveBeenLastCalledWith({ ...query, quantiles: [0.9, 0.999] });
  });

  test('throughput grouping is a choice', async () => {
    const query: InferscopeQuery = { refId: 'A', queryType: 'throughput' };
    const { onChange } = renderEditor(query);
    expect(screen.getByRole('radio', { name: 'model' })).toBeChecked();
    await userEvent.click(screen.getByRole('radio', { name: 'total' }));
    expect(onChange).toHaveBeenLastCalledWith({ ...query, by: 'total' });
  });

  test('the warm-up switch turns the filter off', async () => {
    const query: InferscopeQuery = { refId: 'A', queryType: 'errors' };
    const { onChange } = renderEditor(query);
    const sw = screen.getByRole('switch');
    expect(sw).toBeChecked();
    await userEvent.click(sw);
    expect(onChange).toHaveBeenLastCalledWith({ ...query, warmupFilter: false });
  });

  test('the version field suggests the versions of the query’s model', async () => {
    const requests = installBackend({
      [`${VARS}?kind=version&model=recsys`]: { status: 200, body: { kind: 'version', values: ['v1.4.0', 'v1.5.0'] } },
    });
    const query: InferscopeQuery = { refId: 'A', queryType: 'latency', model: 'recsys' };
    const { onChange } = renderEditor(query);
    await userEvent.click(screen.getByRole('combobox', { name: /^Version/ }));
    const listbox = await screen.findByRole('listbox');
    expect(await within(listbox).findByText('v1.5.0')).toBeInTheDocument();
    await userEvent.click(within(listbox).getByText('v1.5.0'));
    expect(onChange).toHaveBeenLastCalledWith({ ...query, version: 'v1.5.0' });
    expect(requests[0].url).toBe(`${VARS}?kind=version&model=recsys`);
  });
});

describe('parseOption', () => {
  test('durations stay text; bad numbers stay as typed', () => {
    expect(
      parseOption({ key: 'window', label: 'W', kind: 'duration', placeholder: '', description: '' }, ' 10m ')
    ).toBe('10m');
    expect(parseOption({ key: 'q', label: 'Q', kind: 'numbers', placeholder: '', description: '' }, '0.5, x')).toBe(
      '0.5, x'
    );
  });
});
