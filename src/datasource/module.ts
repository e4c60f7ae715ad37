import { DataSourcePlugin } from '@grafana/data';

import { ConfigEditor } from './components/ConfigEditor';
import { QueryEditor } from './components/QueryEditor';
import { DataSource } from './datasource';
import { InferscopeOptions, InferscopeQuery, InferscopeSecureJsonData } from './types';

export const plugin = new DataSourcePlugin<DataSource, InferscopeQuery, InferscopeOptions, InferscopeSecureJsonData>(
  DataSource
)
  .setConfigEditor(ConfigEditor)
  .setQueryEditor(QueryEditor);
