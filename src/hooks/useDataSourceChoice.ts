import { useMemo, useState } from 'react';

import {
  chooseDataSource,
  DataSourceChoice,
  InferscopeDataSourceRef,
  listInferscopeDataSources,
} from '../api/datasources';
import { AppSettings } from '../constants';

export interface DataSourceSelection {
  /** The Inferscope data sources the user can query. */
  dataSources: InferscopeDataSourceRef[];
  /** What the app settings asked for and what was picked for them. */
  choice: DataSourceChoice;
  /** The data source the page uses now. */
  uid?: string;
  setUid: (uid: string) => void;
}

/** The Inferscope data sources and the one a page uses: the configured one first, then the user's pick. */
export function useDataSourceChoice(settings: AppSettings): DataSourceSelection {
  const dataSources = useMemo(() => listInferscopeDataSources(), []);
  const choice = useMemo(() => chooseDataSource(dataSources, settings.datasourceUid), [dataSources, settings]);
  const [uid, setUid] = useState<string | undefined>(choice.selected?.uid);
  return { dataSources, choice, uid, setUid };
}
