import { DataSourceInstanceSettings, PluginType, ScopedVars } from '@grafana/data';
import { setTemplateSrv, TemplateSrv } from '@grafana/runtime';

import { DataSource } from './datasource';
import { InferscopeOptions, InferscopeQuery } from './types';

// Grafana's TemplateSrv lives in Grafana itself, not in the npm packages. This stand-in
// substitutes $name and ${name} from a table and applies the requested format the way
// Grafana does: a format function gets (value, variable), "pipe" joins with "|".
interface Variable {
  value: string | string[];
  multi?: boolean;
  includeAll?: boolean;
}
function installTemplateSrv(vars: Record<string, Variable>) {
  const formats: string[] = [];
  const replace = (target?: string, _scoped?: ScopedVars, format?: string | Function) => {
    formats.push(typeof format === 'function' ? 'function' : (format ?? 'default'));
    return (target ?? '').replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced, plain) => {
      const v = vars[braced ?? plain];
      if (!v) {
        return whole;
      }
      if (typeof format === 'function') {
        return format(v.value, v);
      }
      if (Array.isArray(v.value)) {
        return format === 'pipe' ? v.value.join('|') : `{${v.value.join(',')}}`;
      }
      return v.value;
    });
  };
  setTemplateSrv({ replace } as unknown as TemplateSrv);
  return formats;
}

function newDataSource() {
  const settings = {
    id: 1,
    uid: 'inferscope',
    name: 'Inferscope',
    type: 'inferscope-monitor-datasource',
    access: 'proxy',
    readOnly: false,
    jsonData: {},
    meta: { id: 'inferscope-monitor-datasource', type: PluginType.datasource },
  } as unknown as DataSourceInstanceSettings<InferscopeOptions>;
  return new DataSource(settings);
}

describe('DataSource', () => {
  test('filterQuery drops empty and hidden PromQL queries', () => {
    const ds = newDataSource();
    expect(ds.filterQuery({ refId: 'A', queryType: 'promql', expr: '' })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', queryType: 'promql', expr: '   \n' })).toBe(false);
    expect(ds.filterQuery({ refId: 'A' })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', queryType: 'promql', expr: 'up', hide: true })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', queryType: 'promql', expr: 'up' })).toBe(true);
    expect(ds.filterQuery({ refId: 'A', expr: 'up' })).toBe(true);
  });

  test('filterQuery keeps engine queries, whose filters may all be empty', () => {
    expect(newDataSource().filterQuery({ refId: 'A', queryType: 'latency' })).toBe(true);
  });

  test('applyTemplateVariables escapes expr values and keeps filter values raw', () => {
    const formats = installTemplateSrv({
      model: { value: 'llama-3.1"8b' },
      models: { value: ['a.b', 'c'], multi: true },
      version: { value: ['v1', 'v2'], multi: true },
      instance: { value: 'node-1:8000' },
      gpu: { value: '0' },
    });
    const query: InferscopeQuery = {
      refId: 'A',
      queryType: 'promql',
      expr: 'rate(inference_requests_total{model_name="$model", model_version=~"$models"}[5m])',
      legendFormat: '{{model_version}} on $instance',
      model: '$model',
      version: '$version',
      instance: '${instance}',
      gpu: '$gpu',
      warmupFilter: true,
    };

    const out = newDataSource().applyTemplateVariables(query, {});

    expect(out.expr).toBe(
      'rate(inference_requests_total{model_name="llama-3.1\\"8b", model_version=~"(a\\\\.b|c)"}[5m])'
    );
    expect(out.legendFormat).toBe('{{model_version}} on node-1:8000');
    expect(out.model).toBe('llama-3.1"8b');
    expect(out.version).toBe('v1|v2');
    expect(out.instance).toBe('node-1:8000');
    expect(out.gpu).toBe('0');
    expect(out.warmupFilter).toBe(true);
    expect(out.refId).toBe('A');
    expect(formats).toEqual(['function', 'default', 'pipe', 'pipe', 'pipe', 'pipe']);
  });

  test('applyTemplateVariables leaves absent fields absent', () => {
    installTemplateSrv({});
    const out = newDataSource().applyTemplateVariables({ refId: 'A', queryType: 'promql', expr: 'up' }, {});
    expect(out).toEqual({ refId: 'A', queryType: 'promql', expr: 'up' });
    expect(Object.keys(out)).toEqual(['refId', 'queryType', 'expr']);
  });

  test.each([
    ['true', true],
    ['false', false],
  ])('applyTemplateVariables turns a warm-up switch variable set to %s into a boolean', (value, want) => {
    installTemplateSrv({ warmup: { value } });
    // Dashboards store the switch as "$warmup"; the backend reads a boolean.
    const query = { refId: 'A', queryType: 'latency', warmupFilter: '$warmup' } as unknown as InferscopeQuery;
    const out = newDataSource().applyTemplateVariables(query, {});
    expect(out.warmupFilter).toBe(want);
  });

  test('applyTemplateVariables keeps a boolean warm-up filter as it is', () => {
    installTemplateSrv({});
    const out = newDataSource().applyTemplateVariables({ refId: 'A', queryType: 'split', warmupFilter: false }, {});
    expect(out.warmupFilter).toBe(false);
  });
});
