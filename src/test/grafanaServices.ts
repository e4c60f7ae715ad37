// Stand-ins for the services a running Grafana installs at start-up (setBackendSrv,
// setDataSourceSrv). Tests use the real @grafana packages and replace only these edges:
// the HTTP boundary and the boot-time data source list.
import { Observable, of, throwError } from 'rxjs';
import { DataSourceInstanceSettings, PluginType } from '@grafana/data';
import {
  BackendSrv,
  BackendSrvRequest,
  DataSourceSrv,
  FetchError,
  FetchResponse,
  setBackendSrv,
  setDataSourceSrv,
} from '@grafana/runtime';

export type Reply = { status: number; body: unknown };
export type Handler = (req: BackendSrvRequest) => Reply;

/** Installs a BackendSrv whose fetch answers from `routes` ("METHOD url" or "url"); returns the request log. */
export function installBackend(routes: Record<string, Handler | Reply>): BackendSrvRequest[] {
  const requests: BackendSrvRequest[] = [];
  const fetch = <T>(req: BackendSrvRequest): Observable<FetchResponse<T>> => {
    requests.push(req);
    const method = (req.method ?? 'GET').toUpperCase();
    const route = routes[`${method} ${req.url}`] ?? routes[req.url];
    const reply: Reply =
      route === undefined
        ? { status: 404, body: { message: 'Not found' } }
        : typeof route === 'function'
          ? route(req)
          : route;
    // As Grafana's backend_srv: responseType "text" gives the body as text, answer or error.
    const text = req.responseType === 'text';
    const body = text && typeof reply.body !== 'string' ? (JSON.stringify(reply.body) ?? '') : reply.body;
    if (reply.status >= 400) {
      const err: FetchError = {
        status: reply.status,
        statusText: String(reply.status),
        data: body,
        config: req,
      };
      return throwError(() => err);
    }
    return of({
      data: body as T,
      status: reply.status,
      statusText: 'OK',
      ok: true,
      headers: new Headers(),
      redirected: false,
      type: 'basic',
      url: req.url,
      config: req,
    });
  };
  const unsupported = () => Promise.reject(new Error('only fetch is available in tests'));
  setBackendSrv({
    fetch,
    get: unsupported,
    post: unsupported,
    put: unsupported,
    patch: unsupported,
    delete: unsupported,
    request: unsupported,
    datasourceRequest: unsupported,
    chunked: () => throwError(() => new Error('only fetch is available in tests')),
  } as unknown as BackendSrv);
  return requests;
}

/** A data source as Grafana's boot data lists it. */
export function dataSourceSettings(
  partial: Partial<DataSourceInstanceSettings> & { uid: string; name: string; type: string }
): DataSourceInstanceSettings {
  return {
    access: 'proxy',
    readOnly: false,
    jsonData: {},
    meta: {
      id: partial.type,
      name: partial.type,
      type: PluginType.datasource,
      info: {
        author: { name: '' },
        description: '',
        links: [],
        logos: { small: '', large: '' },
        screenshots: [],
        updated: '',
        version: '',
      },
      module: '',
      baseUrl: '',
    },
    ...partial,
  };
}

/** Installs a DataSourceSrv listing `all`, filtered by type like Grafana's own. */
export function installDataSources(all: DataSourceInstanceSettings[]): void {
  const srv: Partial<DataSourceSrv> = {
    getList: (filters) => {
      const types = filters?.type === undefined ? undefined : ([] as string[]).concat(filters.type);
      return all.filter((ds) => types === undefined || types.includes(ds.type));
    },
    getInstanceSettings: (ref) => all.find((ds) => ds.uid === (typeof ref === 'string' ? ref : ref?.uid)),
  };
  setDataSourceSrv(srv as DataSourceSrv);
}
