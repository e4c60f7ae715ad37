// Template-variable support: values of model, version, instance and GPU from the data source's
// `variables` resource (pkg/datasource/variables.go), chained through the query's model/instance.
import { from, map, Observable } from 'rxjs';
import {
  CustomVariableSupport,
  DataQueryRequest,
  DataQueryResponse,
  MetricFindValue,
  ScopedVars,
  TimeRange,
} from '@grafana/data';
import { getTemplateSrv } from '@grafana/runtime';
import { DataQuery } from '@grafana/schema';

import type { DataSource } from './datasource';
import { VariableQueryEditor } from './components/VariableQueryEditor';
import { fetchBounded } from '../api/bounded';

export type VariableKind = 'model' | 'version' | 'instance' | 'gpu';

/** The stored query of a template variable. */
export interface VariableQuery extends DataQuery {
  kind: VariableKind;
  /** Narrows versions to these models; a template variable such as "$model" is usual. */
  model?: string;
  /** Narrows GPUs to these instances' nodes, e.g. "$instance". */
  instance?: string;
}

export interface VariableFilters {
  model?: string;
  instance?: string;
  range?: TimeRange;
}

export function variablesUrl(uid: string, kind: VariableKind, f: VariableFilters = {}): string {
  const params = new URLSearchParams({ kind });
  if (f.model) {
    params.set('model', f.model);
  }
  if (f.instance) {
    params.set('instance', f.instance);
  }
  if (f.range) {
    params.set('from', String(f.range.from.valueOf()));
    params.set('to', String(f.range.to.valueOf()));
  }
  return `/api/datasources/uid/${encodeURIComponent(uid)}/resources/variables?${params.toString()}`;
}

/** Asks the backend for the values of one kind. */
export async function fetchVariableValues(uid: string, kind: VariableKind, f: VariableFilters = {}): Promise<string[]> {
  return (await fetchVariableOptions(uid, kind, f)).map((o) => o.value);
}

/**
 * Asks the backend for the values of one kind with their texts: on a Prometheus holding several
 * servers a model's text names its server ("llama (vllm)"); the value stays the bare name.
 */
export async function fetchVariableOptions(
  uid: string,
  kind: VariableKind,
  f: VariableFilters = {}
): Promise<Array<{ text: string; value: string }>> {
  const res = await fetchBounded<{ values?: unknown; options?: unknown }>({
    url: variablesUrl(uid, kind, f),
    method: 'GET',
    showErrorAlert: false,
  });
  const values = res.data?.values;
  const texts = new Map<string, string>();
  const options = res.data?.options;
  if (Array.isArray(options)) {
    for (const o of options) {
      if (o && typeof o.value === 'string' && typeof o.text === 'string') {
        texts.set(o.value, o.text);
      }
    }
  }
  return Array.isArray(values)
    ? values.filter((v): v is string => typeof v === 'string').map((v) => ({ text: texts.get(v) ?? v, value: v }))
    : [];
}

/** Replaces template variables in a filter, multi-values as "a|b" (the backend splits them). */
export function interpolateFilter(value: string | undefined, scopedVars?: ScopedVars): string | undefined {
  if (!value) {
    return undefined;
  }
  const out = getTemplateSrv().replace(value, scopedVars, 'pipe');
  return out === '' ? undefined : out;
}

export class InferscopeVariableSupport extends CustomVariableSupport<DataSource, VariableQuery> {
  constructor(private readonly datasource: Pick<DataSource, 'uid'>) {
    super();
  }

  editor = VariableQueryEditor;

  query(request: DataQueryRequest<VariableQuery>): Observable<DataQueryResponse> {
    const q = request.targets[0];
    const kind = q?.kind ?? 'model';
    const filters: VariableFilters = {
      model: interpolateFilter(q?.model, request.scopedVars),
      instance: interpolateFilter(q?.instance, request.scopedVars),
      range: request.range,
    };
    return from(fetchVariableOptions(this.datasource.uid, kind, filters)).pipe(
      map((options) => ({ data: options.map((o): MetricFindValue => ({ text: o.text, value: o.value })) }))
    );
  }
}
