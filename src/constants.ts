import pluginJson from './plugin.json';

export const PLUGIN_ID = pluginJson.id;
export const PLUGIN_BASE_URL = `/a/${pluginJson.id}`;

/** Plugin id of the nested data source (src/datasource/plugin.json). */
export const DATASOURCE_TYPE = 'inferscope-monitor-datasource';

export enum ROUTES {
  Home = 'home',
  Triage = 'triage',
  Gate = 'gate',
}

/** Settings the app keeps in its own jsonData (POST /api/plugins/<id>/settings). */
export interface AppSettings {
  /** uid of the Inferscope data source the app's pages use; empty = the first one found. */
  datasourceUid?: string;
  /**
   * The most the app reads of one answer of Grafana's API or the data source's resources
   * ("16MiB" by default; src/api/bounded.ts): larger answers are an error naming the limit.
   */
  maxAnswerSize?: string;
}
