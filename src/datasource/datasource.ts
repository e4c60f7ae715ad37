import { CoreApp, DataSourceInstanceSettings, ScopedVars } from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv } from '@grafana/runtime';

import { formatPromQLValue } from './interpolate';
import { DEFAULT_QUERY, InferscopeOptions, InferscopeQuery } from './types';
import { InferscopeVariableSupport } from './variables';

const FILTER_FIELDS = ['model', 'version', 'instance', 'gpu'] as const;

export class DataSource extends DataSourceWithBackend<InferscopeQuery, InferscopeOptions> {
  constructor(instanceSettings: DataSourceInstanceSettings<InferscopeOptions>) {
    super(instanceSettings);
    this.variables = new InferscopeVariableSupport(this);
  }

  getDefaultQuery(_: CoreApp): Partial<InferscopeQuery> {
    return DEFAULT_QUERY;
  }

  applyTemplateVariables(query: InferscopeQuery, scopedVars: ScopedVars): InferscopeQuery {
    const srv = getTemplateSrv();
    const out: InferscopeQuery = { ...query };
    if (query.expr !== undefined) {
      out.expr = srv.replace(query.expr, scopedVars, formatPromQLValue);
    }
    if (query.legendFormat !== undefined) {
      out.legendFormat = srv.replace(query.legendFormat, scopedVars);
    }
    // Filter fields keep raw values; the backend escapes them (multi-value: "a|b").
    for (const key of FILTER_FIELDS) {
      const value = query[key];
      if (value !== undefined) {
        out[key] = srv.replace(value, scopedVars, 'pipe');
      }
    }
    // Dashboards bind the warm-up switch to a variable ("$warmup"); the backend expects a boolean.
    const warmup: unknown = query.warmupFilter;
    if (typeof warmup === 'string') {
      const replaced = srv.replace(warmup, scopedVars).trim().toLowerCase();
      out.warmupFilter = replaced !== 'false' && replaced !== '0';
    }
    return out;
  }

  interpolateVariablesInQueries(queries: InferscopeQuery[], scopedVars: ScopedVars): InferscopeQuery[] {
    return queries.map((q) => ({ ...this.applyTemplateVariables(q, scopedVars), datasource: this.getRef() }));
  }

  /** Empty queries are not sent: a new panel has no expression yet. */
  filterQuery(query: InferscopeQuery): boolean {
    if (query.hide) {
      return false;
    }
    switch (query.queryType ?? 'promql') {
      case 'promql':
        return (query.expr ?? '').trim() !== '';
      default:
        // The engine's query types work with every filter empty.
        return true;
    }
  }

  getQueryDisplayText(query: InferscopeQuery): string {
    return query.queryType === 'promql' || query.queryType === undefined ? (query.expr ?? '') : query.queryType;
  }
}
