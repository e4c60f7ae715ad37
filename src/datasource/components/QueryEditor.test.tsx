import React from 'react';
import { fireEvent, render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';

import { DataSource } from '../datasource';
import { InferscopeQuery } from '../types';
import { QueryEditor } from './QueryEditor';

function renderEditor(query: InferscopeQuery) {
  const onChange = jest.fn();
  const onRunQuery = jest.fn();
  render(<QueryEditor datasource={{} as DataSource} query={query} onChange={onChange} onRunQuery={onRunQuery} />);
  return { onChange, onRunQuery };
}

describe('QueryEditor', () => {
  test('changing the expression calls onChange with the whole query and the new expr', () => {
    const query: InferscopeQuery = {
      refId: 'A',
      queryType: 'promql',
      expr: '',
      legendFormat: '{{model_name}}',
      model: 'resnet',
    };
    const { onChange, onRunQuery } = renderEditor(query);

    fireEvent.change(screen.getByRole('textbox', { name: /promql/i }), {
      target: { value: 'sum(rate(inference_requests_total[5m]))' },
    });

    expect(onChange).toHaveBeenCalledTimes(1);
    expect(onChange).toHaveBeenCalledWith({ ...query, expr: 'sum(rate(inference_requests_total[5m]))' });
    expect(onRunQuery).not.toHaveBeenCalled();
  });

  test('leaving the expression field runs the query', async () => {
    const { onRunQuery } = renderEditor({ refId: 'A', queryType: 'promql', expr: 'up' });
    await userEvent.click(screen.getByRole('textbox', { name: /promql/i }));
    await userEvent.tab();
    expect(onRunQuery).toHaveBeenCalledTimes(1);
  });

  test('shift+enter runs the query', async () => {
    const { onRunQuery } = renderEditor({ refId: 'A', queryType: 'promql', expr: 'up' });
    await userEvent.click(screen.getByRole('textbox', { name: /promql/i }));
    await userEvent.keyboard('{Shift>}{Enter}{/Shift}');
    expect(onRunQuery).toHaveBeenCalled();
  });

  test('changing the legend calls onChange with the new legendFormat', () => {
    const query: InferscopeQuery = { refId: 'B', queryType: 'promql', expr: 'up' };
    const { onChange } = renderEditor(query);
    fireEvent.change(screen.getByRole('textbox', { name: /legend/i }), { target: { value: '{{instance}}' } });
    expect(onChange).toHaveBeenCalledWith({ ...query, legendFormat: '{{instance}}' });
  });

  test('a query without a type is edited as PromQL', () => {
    renderEditor({ refId: 'A', expr: 'up' });
    expect(screen.getByRole('radio', { name: 'PromQL' })).toBeChecked();
    expect(screen.getByRole('textbox', { name: /promql/i })).toHaveValue('up');
  });
});
