import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2, QueryEditorProps } from '@grafana/data';
import { Field, Input, RadioButtonGroup, Stack, TextArea, useStyles2 } from '@grafana/ui';

import { DataSource } from '../datasource';
import { EDITOR_QUERY_TYPES, InferscopeOptions, InferscopeQuery, QueryType } from '../types';

export type QueryEditorComponentProps = QueryEditorProps<DataSource, InferscopeQuery, InferscopeOptions>;

export function QueryEditor({ query, onChange, onRunQuery }: QueryEditorComponentProps) {
  const s = useStyles2(getStyles);
  const queryType: QueryType = query.queryType ?? 'promql';
  const typeOptions = EDITOR_QUERY_TYPES.map((t) => ({ label: t.label, value: t.value, description: t.description }));

  const onTypeChange = (value: QueryType) => {
    onChange({ ...query, queryType: value });
    onRunQuery();
  };

  return (
    <Stack direction="column" gap={1}>
      <Field label="Query type" className={s.field}>
        <RadioButtonGroup<QueryType> options={typeOptions} value={queryType} onChange={onTypeChange} size="sm" />
      </Field>

      {queryType === 'promql' && (
        <>
          <Field
            label="PromQL"
            description="Runs as written; template variables are escaped for a double-quoted string, multi-value ones as a regex for =~."
            className={s.field}
          >
            <TextArea
              id={`inferscope-expr-${query.refId}`}
              className={s.code}
              rows={3}
              value={query.expr ?? ''}
              placeholder="histogram_quantile(0.99, sum by (le, model_name) (rate(inference_latency_seconds_bucket[5m])))"
              onChange={(e) => onChange({ ...query, expr: e.currentTarget.value })}
              onBlur={onRunQuery}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && (e.shiftKey || e.ctrlKey || e.metaKey)) {
                  e.preventDefault();
                  onRunQuery();
                }
              }}
            />
          </Field>
          <Field
            label="Legend"
            description='Series name, e.g. "{{model_name}} p99". Empty: the labels.'
            className={s.field}
          >
            <Input
              id={`inferscope-legend-${query.refId}`}
              width={40}
              value={query.legendFormat ?? ''}
              placeholder="{{model_name}}"
              onChange={(e) => onChange({ ...query, legendFormat: e.currentTarget.value })}
              onBlur={onRunQuery}
            />
          </Field>
        </>
      )}
    </Stack>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  field: css({ marginBottom: 0 }),
  code: css({ fontFamily: theme.typography.fontFamilyMonospace }),
});
