import { failureWithStatus, fetchResource, isObject, ResourceRequestError, resourceUrl } from './resource';

/**
 * Client of the data source's `rules` resource (pkg/datasource/alerting.go): the alert-rule
 * catalog, its renderings and the diff against the group Grafana holds.
 */

export type Severity = 'P0' | 'P1' | 'P2';

export interface CatalogRule {
  id: string;
  alert: string;
  title: string;
  severity: Severity;
  scope: 'service' | 'gpu';
  condition: string;
  for: string;
  why: string;
  /** Why the data source's metric profile cannot feed this rule; absent when it can. */
  unavailable?: string;
  /** On a mixed fleet: why each server that cannot feed the rule cannot (the others render it). */
  unavailableOn?: Record<string, string>;
  /** Why the rule's GPU signal is not measured on this fleet (what to enable); the rule is still rendered. */
  notMeasured?: string;
}

export type ParamKind = 'string' | 'bool' | 'int' | 'number' | 'ratio' | 'duration';

export interface RuleParam {
  name: string;
  section: 'placement' | 'grafana' | 'routing' | 'thresholds' | 'metrics';
  kind: ParamKind;
  help: string;
  default: string;
  choices?: string[];
  /** The values of a list parameter, one or more separated by commas (the metric profiles). */
  items?: string[];
  value: string;
  /** Set by the data source's own settings; not editable here. */
  fixed?: boolean;
}

/** The provisioning API's rule group, as the data source renders it. */
export interface GrafanaRuleGroup {
  title: string;
  folderUid: string;
  interval: number;
  rules: GrafanaRule[];
}

export interface GrafanaRule {
  uid: string;
  title: string;
  labels: Record<string, string>;
  [key: string]: unknown;
}

export interface MuteTiming {
  name: string;
  time_intervals: unknown[];
}

export type DiffStatus = 'missing' | 'unchanged' | 'changed' | 'foreign';

export interface RuleChange {
  uid: string;
  title: string;
  change: 'added' | 'removed' | 'changed';
  fields?: string[];
}

export interface GroupDiff {
  status: DiffStatus;
  reason?: string;
  rules?: RuleChange[];
  interval?: string;
}

export interface RulesAnswer {
  catalog: CatalogRule[];
  params: RuleParam[];
  /** name lists every server's profile on a mixed fleet ("custom,vllm"), servers names them. */
  profile: { name: string; detected: boolean; servers?: string[]; notice?: string };
  folder: { uid: string; title: string };
  group: string;
  ruleUids: Record<string, string>;
  ruleGroup?: GrafanaRuleGroup;
  muteTiming?: MuteTiming;
  files?: Record<'prometheus' | 'alertmanager' | 'grafana-provisioning', string>;
  diff?: GroupDiff;
}

/** Parameter values sent to the resource, by parameter name. */
export type ParamValues = Record<string, string>;

export function rulesUrl(uid: string): string {
  return resourceUrl(uid, 'rules');
}

/** The data source's answer could not be had or used. */
export class RulesRequestError extends ResourceRequestError {
  name = 'RulesRequestError';
}

async function post(uid: string, body: object): Promise<RulesAnswer> {
  const data = await fetchResource(
    uid,
    'rules',
    { method: 'POST', body, describe: failureWithStatus },
    RulesRequestError
  );
  return parseRulesAnswer(data);
}

/** The catalog and the parameters with their values. */
export function fetchCatalog(uid: string, params: ParamValues): Promise<RulesAnswer> {
  return post(uid, { action: 'catalog', params });
}

/** The rendered group, mute timing and files. */
export function renderRules(uid: string, params: ParamValues): Promise<RulesAnswer> {
  return post(uid, { action: 'render', params });
}

/** The rendering and its diff against `existing` (what Grafana returned; null when there is no group). */
export function diffRules(uid: string, params: ParamValues, existing: unknown): Promise<RulesAnswer> {
  return post(uid, { action: 'diff', params, existing: existing ?? null });
}

/** Checks the answer's shape so that a malformed reply is an error, not a broken page. */
export function parseRulesAnswer(data: unknown): RulesAnswer {
  if (!isObject(data) || !Array.isArray(data.catalog) || !Array.isArray(data.params) || !isObject(data.folder)) {
    throw new RulesRequestError('the data source answered with an unexpected rules document');
  }
  return data as unknown as RulesAnswer;
}
