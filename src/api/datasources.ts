import { DataSourceInstanceSettings } from '@grafana/data';
import { getDataSourceSrv } from '@grafana/runtime';

import { DATASOURCE_TYPE } from '../constants';

export interface InferscopeDataSourceRef {
  uid: string;
  name: string;
  isDefault: boolean;
}

/** The Inferscope data sources the signed-in user can query. */
export function listInferscopeDataSources(): InferscopeDataSourceRef[] {
  return getDataSourceSrv()
    .getList({ type: DATASOURCE_TYPE })
    .map((ds: DataSourceInstanceSettings) => ({ uid: ds.uid, name: ds.name, isDefault: Boolean(ds.isDefault) }));
}

export interface DataSourceChoice {
  /** The data source to use, if any exists. */
  selected?: InferscopeDataSourceRef;
  /** The uid stored in the app settings when it names no existing data source. */
  missingUid?: string;
}

/** Picks the configured data source, falling back to the default one, then the first. */
export function chooseDataSource(all: InferscopeDataSourceRef[], configuredUid?: string): DataSourceChoice {
  if (configuredUid) {
    const configured = all.find((ds) => ds.uid === configuredUid);
    if (configured) {
      return { selected: configured };
    }
  }
  const fallback = all.find((ds) => ds.isDefault) ?? all[0];
  return { selected: fallback, missingUid: configuredUid || undefined };
}

export function dataSourceSettingsUrl(uid: string): string {
  return `/connections/datasources/edit/${encodeURIComponent(uid)}`;
}

export const NEW_DATASOURCE_URL = `/connections/datasources/new`;
