import React, { useCallback } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2, QueryEditorProps } from '@grafana/data';
import {
  Combobox,
  ComboboxOption,
  Field,
  InlineSwitch,
  Input,
  MultiCombobox,
  RadioButtonGroup,
  Stack,
  Text,
  TextArea,
  useStyles2,
} from '@grafana/ui';

import type { DataSource } from '../datasource';
import { InferscopeOptions, InferscopeQuery, QueryType } from '../types';
import { fetchVariableValues, VariableKind } from '../variables';
import { OptionSpec, QUERY_TYPES, queryTypeSpec } from './queryTypes';

export type QueryEditorComponentProps = QueryEditorProps<DataSource, InferscopeQuery, InferscopeOptions>;

/** The query with the type-specific options the shared type does not list. */
type AnyQuery = InferscopeQuery & Record<string, unknown>;

const FILTER_LABELS: Record<VariableKind, string> = {
  model: 'Model',
  version: 'Version',
  instance: 'Instance',
  gpu: 'GPU',
};

export function QueryEditor({ query, onChange, onRunQuery, datasource, range }: QueryEditorComponentProps) {
  const s = useStyles2(getStyles);
  const spec = queryTypeSpec(query.queryType);
  const q = query as AnyQuery;

  const onTypeChange = (value: QueryType) => {
    onChange({ ...query, queryType: value });
    onRunQuery();
  };
  const set = (key: string, value: unknown) => {
    const next: AnyQuery = { ...q };
    if (value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) {
      delete next[key];
    } else {
      next[key] = value;
    }
    onChange(next);
  };

  // Suggestions come from the variables resource, narrowed by the query's own model/instance.
  const uid = datasource?.uid;
  const { model, instance } = query;
  const suggest = useCallback(
    (kind: VariableKind) => async (input: string) => {
      if (!uid) {
        return [];
      }
      let values: string[] = [];
      try {
        values = await fetchVariableValues(uid, kind, {
          model: kind === 'version' ? model : undefined,
          instance: kind === 'gpu' ? instance : undefined,
          range,
        });
      } catch {
        values = [];
      }
      return values
        .filter((v) => v.toLowerCase().includes(input.toLowerCase()))
        .map((v): ComboboxOption<string> => ({ label: v, value: v }));
    },
    [uid, model, instance, range]
  );

  return (
    <Stack direction="column" gap={1}>
      <Field label="Query type" className={s.field}>
        <RadioButtonGroup<QueryType>
          options={QUERY_TYPES.map((t) => ({ label: t.label, value: t.value, description: t.description }))}
          value={spec.value}
          onChange={onTypeChange}
          size="sm"
        />
      </Field>
      <Text color="secondary" element="p" data-testid="inferscope-query-type-description">
        {spec.description}
      </Text>

      {spec.filters.length > 0 && (
        <Stack direction="row" gap={1} wrap="wrap">
          {spec.filters.map((kind) => (
            <Field
              key={kind}
              label={FILTER_LABELS[kind]}
              description="Empty: all. $variables allowed."
              className={s.field}
            >
              <Combobox<string>
                id={`inferscope-${kind}-${query.refId}`}
                width={28}
                isClearable
                createCustomValue
                placeholder="All"
                value={(query[kind] as string | undefined) ?? null}
                options={suggest(kind)}
                onChange={(v) => {
                  set(kind, v?.value);
                  onRunQuery();
                }}
              />
            </Field>
          ))}
          <Field label="Hide warm-up" description="Drop samples while instances load or warm up" className={s.field}>
            <InlineSwitch
              id={`inferscope-warmup-${query.refId}`}
              value={query.warmupFilter !== false && String(query.warmupFilter) !== 'false'}
              onChange={(e) => {
                set('warmupFilter', e.currentTarget.checked);
                onRunQuery();
              }}
            />
          </Field>
        </Stack>
      )}

      {spec.options.length > 0 && (
        <Stack direction="row" gap={1} wrap="wrap">
          {spec.options.map((opt) => (
            <OptionField
              key={opt.key}
              opt={opt}
              refId={query.refId}
              value={q[opt.key]}
              onChange={(v) => set(opt.key, v)}
              onCommit={onRunQuery}
            />
          ))}
        </Stack>
      )}

      {spec.value !== 'promql' && spec.value !== 'gpu_live' && (
        <Field
          label="Legend"
          description='Series name, e.g. "{{model_name}} {{series}}". Empty: built-in names.'
          className={s.field}
        >
          <Input
            id={`inferscope-legend-${query.refId}`}
            width={40}
            value={query.legendFormat ?? ''}
            onChange={(e) => set('legendFormat', e.currentTarget.value)}
            onBlur={onRunQuery}
          />
        </Field>
      )}

      {spec.value === 'promql' && (
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

interface OptionFieldProps {
  opt: OptionSpec;
  refId: string;
  value: unknown;
  onChange: (value: unknown) => void;
  onCommit: () => void;
}

/** One type-specific option; numbers are sent as numbers, text that is not a number as typed ($variables). */
function OptionField({ opt, refId, value, onChange, onCommit }: OptionFieldProps) {
  const s = useStyles2(getStyles);
  const id = `inferscope-${opt.key}-${refId}`;
  if (opt.kind === 'choice') {
    return (
      <Field label={opt.label} description={opt.description} className={s.field}>
        <RadioButtonGroup<string>
          options={(opt.choices ?? []).map((c) => ({ label: c, value: c }))}
          value={typeof value === 'string' ? value : opt.placeholder}
          onChange={(v) => {
            onChange(v);
            onCommit();
          }}
          size="sm"
        />
      </Field>
    );
  }
  if (opt.kind === 'multichoice') {
    const selected = Array.isArray(value) ? (value as string[]) : typeof value === 'string' && value ? [value] : [];
    return (
      <Field label={opt.label} description={opt.description} className={s.field}>
        <MultiCombobox<string>
          id={id}
          width={40}
          placeholder="All"
          options={(opt.choices ?? []).map((c) => ({ label: c, value: c }))}
          value={selected}
          onChange={(items) => {
            onChange(items.map((i) => i.value));
            onCommit();
          }}
        />
      </Field>
    );
  }
  const text = Array.isArray(value) ? value.join(', ') : value === undefined || value === null ? '' : String(value);
  return (
    <Field label={opt.label} description={opt.description} className={s.field}>
      <Input
        id={id}
        width={16}
        placeholder={opt.placeholder}
        value={text}
        onChange={(e) => onChange(parseOption(opt, e.currentTarget.value))}
        onBlur={onCommit}
      />
    </Field>
  );
}

/** Turns the typed text into the JSON the backend reads. */
export function parseOption(opt: OptionSpec, text: string): unknown {
  const t = text.trim();
  if (t === '') {
    return undefined;
  }
  if (opt.kind === 'number') {
    const n = Number(t);
    return Number.isFinite(n) ? n : t;
  }
  if (opt.kind === 'numbers') {
    const parts = t
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '');
    const nums = parts.map(Number);
    return nums.every(Number.isFinite) ? nums : t;
  }
  return t;
}

const getStyles = (theme: GrafanaTheme2) => ({
  field: css({ marginBottom: 0 }),
  code: css({ fontFamily: theme.typography.fontFamilyMonospace }),
});
