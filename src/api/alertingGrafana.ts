import { BackendSrvRequest, FetchError, isFetchError } from '@grafana/runtime';

import { AnswerTooLargeError, fetchBounded } from './bounded';

import { diffRules, fetchCatalog, GroupDiff, ParamValues, RulesAnswer, RulesRequestError } from './alerting';

/**
 * The Alert rules page's one click, against Grafana's own API with the signed-in user's
 * session: create the folder if needed, make sure the record-only mute timing exists, and
 * write the whole rule group with PUT …/rule-groups/{group} (X-Disable-Provenance, so the rules
 * stay editable in Grafana's UI). The group is compared first: an identical group is not
 * written ("no change"), a group Inferscope did not create is never touched, and what this
 * click created is removed again when a later step fails.
 */

export type Step =
  | 'read-folder'
  | 'create-folder'
  | 'read-group'
  | 'compare'
  | 'read-mute-timing'
  | 'create-mute-timing'
  | 'write-group';

const stepText: Record<Step, string> = {
  'read-folder': 'checking the folder',
  'create-folder': 'creating the folder',
  'read-group': 'reading the existing rule group',
  compare: 'comparing the rules with the existing group',
  'read-mute-timing': 'checking the record-only mute timing',
  'create-mute-timing': 'creating the record-only mute timing',
  'write-group': 'writing the rule group',
};

/** What a 403 at each step means: the permission the signed-in user lacks. */
const missingPermission: Record<Step, string> = {
  'read-folder': 'the folders:read permission on the folder',
  'create-folder': 'the folders:create permission (Editor or Admin role) to create the folder',
  'read-group': 'alert.provisioning:read (or alert.rules:read on the folder) to read alert rules',
  compare: 'access to the Inferscope data source',
  'read-mute-timing': 'alert.notifications.time-intervals:read (or alert.notifications:read) to read mute timings',
  'create-mute-timing':
    'alert.notifications.time-intervals:write (or alert.notifications:write, or alert.provisioning:write) to create mute timings',
  'write-group':
    'alert.provisioning:write or alert.rules.provisioning:write (Admin role), or alert.rules:create, alert.rules:write and alert.rules:delete on the folder together with alert.provisioning.provenance:write, to write alert rules',
};

export interface ProvisionResult {
  kind: 'created' | 'updated' | 'unchanged';
  /** One sentence for the person who clicked. */
  message: string;
  diff: GroupDiff;
  folderCreated: boolean;
  muteTimingCreated: boolean;
}

/** A step failed; nothing this click created is left behind unless `leftBehind` says so. */
export class ProvisionError extends Error {
  constructor(
    message: string,
    readonly step: Step,
    readonly status?: number,
    readonly leftBehind: string[] = []
  ) {
    super(message);
    this.name = 'ProvisionError';
  }
}

export const folderUrl = (uid: string) => `/api/folders/${encodeURIComponent(uid)}`;
export const FOLDERS_URL = '/api/folders';
export const ruleGroupUrl = (folderUid: string, group: string) =>
  `/api/v1/provisioning/folder/${encodeURIComponent(folderUid)}/rule-groups/${encodeURIComponent(group)}`;
export const MUTE_TIMINGS_URL = '/api/v1/provisioning/mute-timings';
export const muteTimingUrl = (name: string) => `${MUTE_TIMINGS_URL}/${encodeURIComponent(name)}`;
export const CONTACT_POINTS_URL = '/api/v1/provisioning/contact-points';
export const RULE_STATES_URL = '/api/prometheus/grafana/api/v1/rules';

/** Rules written through the API stay editable in Grafana's UI only with this header. */
export const DISABLE_PROVENANCE = { 'X-Disable-Provenance': 'true' };

class StepFailure extends Error {
  constructor(
    readonly step: Step,
    readonly cause: unknown
  ) {
    super(stepText[step]);
  }
}

async function call<T>(step: Step, req: BackendSrvRequest): Promise<T> {
  try {
    const res = await fetchBounded<T>({ showErrorAlert: false, showSuccessAlert: false, ...req });
    return res.data;
  } catch (err) {
    throw new StepFailure(step, err);
  }
}

/** GET that answers undefined on 404. */
async function getOptional<T>(step: Step, url: string): Promise<T | undefined> {
  try {
    return await call<T>(step, { url, method: 'GET' });
  } catch (err) {
    if (err instanceof StepFailure && isFetchError(err.cause) && err.cause.status === 404) {
      return undefined;
    }
    throw err;
  }
}

/** Provisions the data source's rendered rule group in Grafana. */
export async function provisionRules(dsUid: string, params: ParamValues): Promise<ProvisionResult> {
  const created: Array<{ what: string; undo: () => Promise<unknown> }> = [];
  let step: Step = 'compare';
  try {
    const target = await fetchCatalog(dsUid, params).catch((err) => {
      throw new StepFailure('compare', err);
    });
    const { uid: folderUid, title: folderTitle } = target.folder;
    const group = target.group;

    step = 'read-folder';
    const folder = await getOptional<unknown>(step, folderUrl(folderUid));
    step = 'read-group';
    const existing =
      folder === undefined ? undefined : await getOptional<unknown>(step, ruleGroupUrl(folderUid, group));

    step = 'compare';
    const plan: RulesAnswer = await diffRules(dsUid, params, existing ?? null).catch((err) => {
      throw new StepFailure('compare', err);
    });
    const diff = plan.diff;
    if (!diff || !plan.ruleGroup || !plan.muteTiming) {
      throw new ProvisionError('The data source did not return a rule group to write.', 'compare');
    }
    if (diff.status === 'foreign') {
      throw new ProvisionError(
        diff.reason ?? `The rule group "${group}" exists and was not created by Inferscope; it was left as it is.`,
        'compare'
      );
    }

    step = 'read-mute-timing';
    const mt = await getOptional<unknown>(step, muteTimingUrl(plan.muteTiming.name));
    if (mt === undefined) {
      step = 'create-mute-timing';
      await call(step, { url: MUTE_TIMINGS_URL, method: 'POST', data: plan.muteTiming, headers: DISABLE_PROVENANCE });
      const name = plan.muteTiming.name;
      created.push({
        what: `the mute timing "${name}"`,
        undo: () => call('create-mute-timing', { url: muteTimingUrl(name), method: 'DELETE' }),
      });
    }

    if (diff.status === 'unchanged') {
      return {
        kind: 'unchanged',
        message:
          mt === undefined
            ? `No change to the ${plan.ruleGroup.rules.length} rules; the missing mute timing "${plan.muteTiming.name}" was created again.`
            : `No change: the rule group "${group}" in folder "${folderTitle}" already holds exactly these ${plan.ruleGroup.rules.length} rules.`,
        diff,
        folderCreated: false,
        muteTimingCreated: mt === undefined,
      };
    }

    if (folder === undefined) {
      step = 'create-folder';
      await call(step, { url: FOLDERS_URL, method: 'POST', data: { uid: folderUid, title: folderTitle } });
      created.push({
        what: `the folder "${folderTitle}"`,
        undo: () => call('create-folder', { url: folderUrl(folderUid), method: 'DELETE' }),
      });
    }

    step = 'write-group';
    await call(step, {
      url: ruleGroupUrl(folderUid, group),
      method: 'PUT',
      data: plan.ruleGroup,
      headers: DISABLE_PROVENANCE,
    });

    const n = plan.ruleGroup.rules.length;
    const changed = (diff.rules ?? []).length;
    return diff.status === 'missing'
      ? {
          kind: 'created',
          message: `Created the rule group "${group}" with ${n} rules in folder "${folderTitle}"${folder === undefined ? ' (folder created)' : ''}.`,
          diff,
          folderCreated: folder === undefined,
          muteTimingCreated: mt === undefined,
        }
      : {
          kind: 'updated',
          message: `Updated the rule group "${group}": ${changed} rule${changed === 1 ? '' : 's'} changed${diff.interval ? `, interval ${diff.interval}` : ''}.`,
          diff,
          folderCreated: false,
          muteTimingCreated: mt === undefined,
        };
  } catch (err) {
    if (err instanceof ProvisionError) {
      throw await withRollback(err, created);
    }
    const failure = err instanceof StepFailure ? err : new StepFailure(step, err);
    throw await withRollback(describe(failure), created);
  }
}

/** Undoes what this click created, newest first, and says so in the error. */
async function withRollback(
  err: ProvisionError,
  created: Array<{ what: string; undo: () => Promise<unknown> }>
): Promise<ProvisionError> {
  const removed: string[] = [];
  const left: string[] = [];
  for (const c of [...created].reverse()) {
    try {
      await c.undo();
      removed.push(c.what);
    } catch {
      left.push(c.what);
    }
  }
  let tail = ' Nothing was changed in Grafana.';
  if (removed.length > 0 && left.length === 0) {
    tail = ` ${capitalize(removed.join(' and '))} created by this attempt ${removed.length === 1 ? 'was' : 'were'} removed again: nothing was changed in Grafana.`;
  } else if (left.length > 0) {
    tail = ` ${capitalize(left.join(' and '))} created by this attempt could not be removed again; remove ${left.length === 1 ? 'it' : 'them'} by hand. No rule was written.`;
  }
  return new ProvisionError(err.message + tail, err.step, err.status, left);
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Turns a failed step into a message that says what failed and what to do. */
function describe(f: StepFailure): ProvisionError {
  const what = stepText[f.step];
  const cause = f.cause;
  if (cause instanceof RulesRequestError) {
    return new ProvisionError(
      `The Inferscope data source could not render the rules: ${cause.message}.`,
      f.step,
      cause.status
    );
  }
  if (cause instanceof AnswerTooLargeError) {
    return new ProvisionError(`Grafana's answer was too large while ${what}: ${cause.message}.`, f.step, cause.status);
  }
  if (isFetchError(cause) && typeof cause.status === 'number' && cause.status > 0) {
    const fe = cause as FetchError<{ message?: string; error?: string } | string | undefined>;
    const body = fe.data;
    const said = typeof body === 'string' ? body : body?.message || body?.error || '';
    const grafana = said ? ` Grafana said: "${said}".` : '';
    switch (fe.status) {
      case 403:
        return new ProvisionError(
          `Permission denied while ${what}: you need ${missingPermission[f.step]}.${grafana}`,
          f.step,
          403
        );
      case 401:
        return new ProvisionError(
          `Your Grafana session has expired while ${what}: sign in again and retry.`,
          f.step,
          401
        );
      case 409:
        return new ProvisionError(
          `Grafana reported a conflict while ${what}.${grafana} Someone may have changed the same folder or rules at the same moment, or one of the rule uids is used in another folder or group; reload the page and try again.`,
          f.step,
          409
        );
      default:
        return new ProvisionError(`Grafana answered HTTP ${fe.status} while ${what}.${grafana}`, f.step, fe.status);
    }
  }
  const msg =
    cause instanceof Error ? cause.message : isFetchError(cause) ? cause.statusText || 'no answer' : String(cause);
  return new ProvisionError(`Grafana could not be reached while ${what} (${msg}).`, f.step);
}

/** Names of the contact points the user may pick (empty when they cannot be listed). */
export async function listContactPoints(): Promise<string[]> {
  try {
    const data = await call<unknown>('read-group', { url: CONTACT_POINTS_URL, method: 'GET' });
    if (!Array.isArray(data)) {
      return [];
    }
    const names = data
      .map((cp) => (typeof cp === 'object' && cp !== null ? (cp as { name?: unknown }).name : undefined))
      .filter((n): n is string => typeof n === 'string' && n !== '');
    return Array.from(new Set(names)).sort();
  } catch {
    return [];
  }
}

export type RuleState = 'firing' | 'pending' | 'normal' | 'error' | 'nodata';

/** The state of each rule of the group, by rule uid, from Grafana's Prometheus-style rules API. */
export async function fetchRuleStates(folderUid: string, group: string): Promise<Record<string, RuleState>> {
  const url = `${RULE_STATES_URL}?folder_uid=${encodeURIComponent(folderUid)}&rule_group=${encodeURIComponent(group)}`;
  const data = await call<unknown>('read-group', { url, method: 'GET' });
  const out: Record<string, RuleState> = {};
  const groups = (data as { data?: { groups?: unknown[] } })?.data?.groups;
  if (!Array.isArray(groups)) {
    return out;
  }
  for (const g of groups) {
    const grp = g as { name?: string; folderUid?: string; rules?: unknown[] };
    if (
      grp.name !== group ||
      (grp.folderUid !== undefined && grp.folderUid !== folderUid) ||
      !Array.isArray(grp.rules)
    ) {
      continue;
    }
    for (const r of grp.rules) {
      const rule = r as { uid?: string; state?: string; health?: string };
      if (!rule.uid) {
        continue;
      }
      out[rule.uid] =
        rule.health === 'error'
          ? 'error'
          : rule.health === 'nodata'
            ? 'nodata'
            : rule.state === 'firing' || rule.state === 'pending'
              ? rule.state
              : 'normal';
    }
  }
  return out;
}
