import { DataSourceSettings } from '@grafana/data';
import { AuthMethod } from '@grafana/plugin-ui';

import { InferscopeOptions, InferscopeSecureJsonData } from '../types';

// Bearer tokens travel as Grafana's standard custom header: httpHeaderNameN "Authorization"
// with the secure httpHeaderValueN "Bearer <token>", so the backend's standard HTTP client
// options and existing provisioning files work unchanged. The "Bearer token" method is a
// view of that header: it is selected exactly when such a header exists.

export type Settings = DataSourceSettings<InferscopeOptions, InferscopeSecureJsonData>;
export const BEARER_METHOD = 'custom-bearer' as const;
export type SupportedAuthMethod = AuthMethod.NoAuth | AuthMethod.BasicAuth | typeof BEARER_METHOD;

const AUTH_HEADER = 'authorization';
const NAME_PREFIX = 'httpHeaderName';
const VALUE_PREFIX = 'httpHeaderValue';

function headerIndexes(jsonData: InferscopeOptions): number[] {
  return Object.keys(jsonData)
    .filter((k) => k.startsWith(NAME_PREFIX))
    .map((k) => Number(k.slice(NAME_PREFIX.length)))
    .filter((n) => Number.isInteger(n) && n > 0);
}

/** The N of the httpHeaderNameN that holds "Authorization", if any. */
export function authHeaderIndex(jsonData: InferscopeOptions): number | undefined {
  return headerIndexes(jsonData)
    .sort((a, b) => a - b)
    .find((n) => (jsonData[`${NAME_PREFIX}${n}`] ?? '').trim().toLowerCase() === AUTH_HEADER);
}

export function selectedAuthMethod(options: Settings): SupportedAuthMethod {
  if (options.basicAuth) {
    return AuthMethod.BasicAuth;
  }
  if (authHeaderIndex(options.jsonData) !== undefined) {
    return BEARER_METHOD;
  }
  return AuthMethod.NoAuth;
}

export function selectAuthMethod(options: Settings, method: string): Settings {
  let next: Settings = {
    ...options,
    basicAuth: method === AuthMethod.BasicAuth,
    withCredentials: false,
    jsonData: { ...options.jsonData, oauthPassThru: false },
  };
  const index = authHeaderIndex(next.jsonData);
  if (method === BEARER_METHOD) {
    if (index === undefined) {
      const free = Math.max(0, ...headerIndexes(next.jsonData)) + 1;
      next = { ...next, jsonData: { ...next.jsonData, [`${NAME_PREFIX}${free}`]: 'Authorization' } };
    }
    return next;
  }
  if (index !== undefined) {
    // Leaving bearer: drop the header and the stored token. Other headers keep their numbers,
    // because a stored secret cannot be moved to another index from the browser.
    const jsonData = { ...next.jsonData };
    delete jsonData[`${NAME_PREFIX}${index}`];
    next = {
      ...next,
      jsonData,
      secureJsonData: { ...next.secureJsonData, [`${VALUE_PREFIX}${index}`]: '' },
      secureJsonFields: { ...next.secureJsonFields, [`${VALUE_PREFIX}${index}`]: false },
    };
  }
  return next;
}

/** Stores the token as "Bearer <token>"; a pasted "Bearer …" is not doubled. */
export function setBearerToken(options: Settings, token: string): Settings {
  let next = options;
  let index = authHeaderIndex(next.jsonData);
  if (index === undefined) {
    next = selectAuthMethod(next, BEARER_METHOD);
    index = authHeaderIndex(next.jsonData)!;
  }
  const bare = token.trim().replace(/^bearer\s+/i, '');
  return {
    ...next,
    secureJsonData: { ...next.secureJsonData, [`${VALUE_PREFIX}${index}`]: bare === '' ? '' : `Bearer ${bare}` },
  };
}

export function resetBearerToken(options: Settings): Settings {
  const index = authHeaderIndex(options.jsonData);
  if (index === undefined) {
    return options;
  }
  return {
    ...options,
    secureJsonData: { ...options.secureJsonData, [`${VALUE_PREFIX}${index}`]: '' },
    secureJsonFields: { ...options.secureJsonFields, [`${VALUE_PREFIX}${index}`]: false },
  };
}

export function bearerTokenConfigured(options: Settings): boolean {
  const index = authHeaderIndex(options.jsonData);
  return index !== undefined && Boolean(options.secureJsonFields?.[`${VALUE_PREFIX}${index}`]);
}
