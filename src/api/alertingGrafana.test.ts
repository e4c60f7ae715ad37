import { BackendSrvRequest } from '@grafana/runtime';

import catalog from '../pages/AlertRules/testdata/rules-catalog.json';
import render from '../pages/AlertRules/testdata/rules-render.json';
import * as grafana from '../pages/AlertRules/testdata/grafana';
import { installBackend, Handler, Reply } from '../test/grafanaServices';
import { GroupDiff, rulesUrl } from './alerting';
import {
  DISABLE_PROVENANCE,
  fetchRuleStates,
  folderUrl,
  FOLDERS_URL,
  listContactPoints,
  MUTE_TIMINGS_URL,
  muteTimingUrl,
  ProvisionError,
  provisionRules,
  ruleGroupUrl,
  RULE_STATES_URL,
} from './alertingGrafana';

// The one-click flow against Grafana's recorded answers (testdata/grafana.ts) and the data
// source's recorded answers (testdata/rules-*.json, checked against the Go data source by
// pkg/datasource's TestRulesResourceRecordedAnswersAreCurrent). The data source decides the
// diff; these tests check what the page does with each verdict and each Grafana answer.

const DS = 'inferscope';
const FOLDER = folderUrl('inferscope');
const GROUP = ruleGroupUrl('inferscope', 'inferscope');
const MUTE = muteTimingUrl('inferscope-record-only');

const missing: GroupDiff = {
  status: 'missing',
  rules: render.ruleGroup.rules.map((r) => ({ uid: r.uid, title: r.title, change: 'added' as const })),
};
const unchanged: GroupDiff = { status: 'unchanged' };
const changed: GroupDiff = {
  status: 'changed',
  rules: [
    { uid: render.ruleUids['jitter-p1'], title: 'P1 Jitter source on the path', change: 'changed', fields: ['data'] },
  ],
};
const foreign: GroupDiff = {
  status: 'foreign',
  reason:
    'the group "inferscope" already exists and its rule "Search latency" lacks the label inferscope_managed="true": Inferscope did not create it and will not replace it; choose another group name',
};

/** The data source's rules resource: the recorded catalog, and the recorded rendering with `diff`. */
function dataSource(diff: (existing: unknown) => GroupDiff, seen: unknown[] = []): Handler {
  return (req: BackendSrvRequest) => {
    const body = req.data as { action: string; existing?: unknown };
    if (body.action === 'catalog') {
      return { status: 200, body: catalog };
    }
    seen.push(body.existing);
    return { status: 200, body: { ...render, diff: diff(body.existing) } };
  };
}

const ok = (body: unknown = {}): Reply => ({ status: 200, body });
const calls = (requests: BackendSrvRequest[]) => requests.map((r) => `${r.method} ${r.url}`);

describe('provisionRules', () => {
  test('folder exists, group missing: writes the group once, editable, and says created', async () => {
    const existing: unknown[] = [];
    const requests = installBackend({
      [`POST ${rulesUrl(DS)}`]: dataSource(() => missing, existing),
      [`GET ${FOLDER}`]: ok(grafana.folderFound),
      [`GET ${GROUP}`]: { status: 404, body: grafana.ruleGroupNotFound },
      [`GET ${MUTE}`]: ok(grafana.muteTimingFound),
      [`PUT ${GROUP}`]: ok(render.ruleGroup),
    });

    const result = await provisionRules(DS, {});

    expect(result.kind).toBe('created');
    expect(result.message).toBe(
      `Created the rule group "inferscope" with ${render.ruleGroup.rules.length} rules in folder "Inferscope".`
    );
    expect(calls(requests)).toEqual([
      `POST ${rulesUrl(DS)}`,
      `GET ${FOLDER}`,
      `GET ${GROUP}`,
      `POST ${rulesUrl(DS)}`,
      `GET ${MUTE}`,
      `PUT ${GROUP}`,
    ]);
    expect(existing).toEqual([null]);
    const put = requests[requests.length - 1];
    expect(put.headers).toEqual(DISABLE_PROVENANCE);
    expect(put.data).toEqual(render.ruleGroup);
  });

  test('folder missing: creates the folder and the mute timing, then the group', async () => {
    const requests = installBackend({
      [`POST ${rulesUrl(DS)}`]: dataSource(() => missing),
      [`GET ${FOLDER}`]: { status: 404, body: grafana.folderNotFound },
      [`GET ${MUTE}`]: { status: 404, body: grafana.muteTimingNotFound },
      [`POST ${MUTE_TIMINGS_URL}`]: ok(grafana.muteTimingFound),
      [`POST ${FOLDERS_URL}`]: ok(grafana.folderFound),
      [`PUT ${GROUP}`]: ok(render.ruleGroup),
    });

    const result = await provisionRules(DS, {});

    expect(result).toMatchObject({ kind: 'created', folderCreated: true, muteTimingCreated: true });
    expect(result.message).toContain('(folder created)');
    expect(calls(requests)).toEqual([
      `POST ${rulesUrl(DS)}`,
      `GET ${FOLDER}`,
      `POST ${rulesUrl(DS)}`,
      `GET ${MUTE}`,
      `POST ${MUTE_TIMINGS_URL}`,
      `POST ${FOLDERS_URL}`,
      `PUT ${GROUP}`,
    ]);
    expect(requests[4].data).toEqual(render.muteTiming);
    expect(requests[4].headers).toEqual(DISABLE_PROVENANCE);
    expect(requests[5].data).toEqual({ uid: 'inferscope', title: 'Inferscope' });
  });

  test('a second click changes nothing and says so', async () => {
    // A Grafana that keeps what is written; the data source finds the stored group identical.
    let stored: unknown;
    const requests = installBackend({
      [`POST ${rulesUrl(DS)}`]: dataSource((existing) => (existing ? unchanged : missing)),
      [`GET ${FOLDER}`]: ok(grafana.folderFound),
      [`GET ${GROUP}`]: () => (stored ? ok(stored) : { status: 404, body: grafana.ruleGroupNotFound }),
      [`GET ${MUTE}`]: ok(grafana.muteTimingFound),
      [`PUT ${GROUP}`]: () => {
        stored = grafana.ruleGroupAsStored;
        return ok(stored);
      },
    });

    expect((await provisionRules(DS, {})).kind).toBe('created');
    const second = await provisionRules(DS, {});

    expect(second.kind).toBe('unchanged');
    expect(second.message).toBe(
      `No change: the rule group "inferscope" in folder "Inferscope" already holds exactly these ${render.ruleGroup.rules.length} rules.`
    );
    expect(calls(requests).filter((c) => c.startsWith('PUT'))).toHaveLength(1);
    expect(
      requests
        .filter((r) => r.method === 'POST' && r.url === rulesUrl(DS))
        .map((r) => (r.data as { existing?: unknown }).existing)
    ).toEqual([undefined, null, undefined, grafana.ruleGroupAsStored]);
  });

  test('group exists and differs: replaces it and counts the changes', async () => {
    const requests = installBackend({
      [`POST ${rulesUrl(DS)}`]: dataSource(() => changed),
      [`GET ${FOLDER}`]: ok(grafana.folderFound),
      [`GET ${GROUP}`]: ok(grafana.ruleGroupAsStored),
      [`GET ${MUTE}`]: ok(grafana.muteTimingFound),
      [`PUT ${GROUP}`]: ok(render.ruleGroup),
    });

    const result = await provisionRules(DS, { jitterRatio: '6' });

    expect(result.kind).toBe('updated');
    expect(result.message).toBe('Updated the rule group "inferscope": 1 rule changed.');
    expect(requests[0].data).toEqual({ action: 'catalog', params: { jitterRatio: '6' } });
    expect(calls(requests)).toContain(`PUT ${GROUP}`);
  });

  test('never touches a group it did not create', async () => {
    const requests = installBackend({
      [`POST ${rulesUrl(DS)}`]: dataSource(() => foreign),
      [`GET ${FOLDER}`]: ok(grafana.folderFound),
      [`GET ${GROUP}`]: ok(grafana.foreignRuleGroup),
    });

    const err = await provisionRules(DS, {}).catch((e) => e);

    expect(err).toBeInstanceOf(ProvisionError);
    expect(err.message).toBe(`${foreign.reason} Nothing was changed in Grafana.`);
    expect(requests.every((r) => r.method === 'GET' || r.url === rulesUrl(DS))).toBe(true);
  });

  test('403 on the rule group: names the missing permission and removes the folder it created', async () => {
    const requests = installBackend({
      [`POST ${rulesUrl(DS)}`]: dataSource(() => missing),
      [`GET ${FOLDER}`]: { status: 404, body: grafana.folderNotFound },
      [`GET ${MUTE}`]: ok(grafana.muteTimingFound),
      [`POST ${FOLDERS_URL}`]: ok(grafana.folderFound),
      [`PUT ${GROUP}`]: { status: 403, body: grafana.forbiddenRuleGroupWrite },
      [`DELETE ${FOLDER}`]: ok({ message: 'Folder deleted' }),
    });

    const err = await provisionRules(DS, {}).catch((e) => e);

    expect(err).toBeInstanceOf(ProvisionError);
    expect(err).toMatchObject({ step: 'write-group', status: 403, leftBehind: [] });
    expect(err.message).toMatch(
      /^Permission denied while writing the rule group: you need alert\.provisioning:write or alert\.rules\.provisioning:write/
    );
    expect(err.message).toContain(`Grafana said: "${grafana.forbiddenRuleGroupWrite.message}"`);
    expect(err.message).toMatch(
      /The folder "Inferscope" created by this attempt was removed again: nothing was changed in Grafana\.$/
    );
    expect(calls(requests).slice(-2)).toEqual([`PUT ${GROUP}`, `DELETE ${FOLDER}`]);
  });

  test('403 on the folder: names folders:create and writes nothing', async () => {
    const requests = installBackend({
      [`POST ${rulesUrl(DS)}`]: dataSource(() => missing),
      [`GET ${FOLDER}`]: { status: 404, body: grafana.folderNotFound },
      [`GET ${MUTE}`]: ok(grafana.muteTimingFound),
      [`POST ${FOLDERS_URL}`]: { status: 403, body: grafana.forbiddenFolderCreate },
    });

    const err = await provisionRules(DS, {}).catch((e) => e);

    expect(err.message).toBe(
      `Permission denied while creating the folder: you need the folders:create permission (Editor or Admin role) to create the folder. Grafana said: "${grafana.forbiddenFolderCreate.message}". Nothing was changed in Grafana.`
    );
    expect(calls(requests)).not.toContain(`PUT ${GROUP}`);
  });

  test('409 on the rule group: explains the conflict and removes the mute timing it created', async () => {
    const requests = installBackend({
      [`POST ${rulesUrl(DS)}`]: dataSource(() => changed),
      [`GET ${FOLDER}`]: ok(grafana.folderFound),
      [`GET ${GROUP}`]: ok(grafana.ruleGroupAsStored),
      [`GET ${MUTE}`]: { status: 404, body: grafana.muteTimingNotFound },
      [`POST ${MUTE_TIMINGS_URL}`]: ok(grafana.muteTimingFound),
      [`PUT ${GROUP}`]: { status: 409, body: grafana.conflictRuleGroupWrite },
      [`DELETE ${MUTE}`]: { status: 204, body: '' },
    });

    const err = await provisionRules(DS, {}).catch((e) => e);

    expect(err).toMatchObject({ step: 'write-group', status: 409 });
    expect(err.message).toContain('Grafana reported a conflict while writing the rule group.');
    expect(err.message).toContain(grafana.conflictRuleGroupWrite.message);
    expect(err.message).toContain('reload the page and try again');
    expect(err.message).toMatch(/The mute timing "inferscope-record-only" created by this attempt was removed again/);
    expect(calls(requests).slice(-1)).toEqual([`DELETE ${MUTE}`]);
  });

  test('network failure: tells what failed and leaves nothing half-written', async () => {
    const requests = installBackend({
      [`POST ${rulesUrl(DS)}`]: dataSource(() => missing),
      [`GET ${FOLDER}`]: { status: 404, body: grafana.folderNotFound },
      [`GET ${MUTE}`]: { status: 404, body: grafana.muteTimingNotFound },
      [`POST ${MUTE_TIMINGS_URL}`]: ok(grafana.muteTimingFound),
      [`POST ${FOLDERS_URL}`]: ok(grafana.folderFound),
      [`PUT ${GROUP}`]: () => {
        throw new TypeError('Failed to fetch');
      },
      [`DELETE ${FOLDER}`]: ok({ message: 'Folder deleted' }),
      [`DELETE ${MUTE}`]: { status: 204, body: '' },
    });

    const err = await provisionRules(DS, {}).catch((e) => e);

    expect(err.message).toBe(
      'Grafana could not be reached while writing the rule group (Failed to fetch). The folder "Inferscope" and the mute timing "inferscope-record-only" created by this attempt were removed again: nothing was changed in Grafana.'
    );
    expect(calls(requests).slice(-2)).toEqual([`DELETE ${FOLDER}`, `DELETE ${MUTE}`]);
  });

  test('says what it could not clean up', async () => {
    installBackend({
      [`POST ${rulesUrl(DS)}`]: dataSource(() => missing),
      [`GET ${FOLDER}`]: { status: 404, body: grafana.folderNotFound },
      [`GET ${MUTE}`]: ok(grafana.muteTimingFound),
      [`POST ${FOLDERS_URL}`]: ok(grafana.folderFound),
      [`PUT ${GROUP}`]: { status: 500, body: { message: 'database is locked' } },
      [`DELETE ${FOLDER}`]: () => {
        throw new TypeError('Failed to fetch');
      },
    });

    const err = await provisionRules(DS, {}).catch((e) => e);

    expect(err.message).toBe(
      'Grafana answered HTTP 500 while writing the rule group. Grafana said: "database is locked". The folder "Inferscope" created by this attempt could not be removed again; remove it by hand. No rule was written.'
    );
    expect(err.leftBehind).toEqual(['the folder "Inferscope"']);
  });

  test('the data source failing stops before anything is written', async () => {
    const requests = installBackend({ [`POST ${rulesUrl(DS)}`]: { status: 502, body: { error: 'bad gateway' } } });

    const err = await provisionRules(DS, {}).catch((e) => e);

    expect(err.message).toBe(
      'The Inferscope data source could not render the rules: the data source answered HTTP 502: bad gateway. Nothing was changed in Grafana.'
    );
    expect(calls(requests)).toEqual([`POST ${rulesUrl(DS)}`]);
  });
});

describe('Grafana lookups', () => {
  test('contact point names, each once, sorted', async () => {
    installBackend({ '/api/v1/provisioning/contact-points': ok(grafana.contactPoints) });
    expect(await listContactPoints()).toEqual(['grafana-default-email', 'ml-chat', 'oncall-phone']);
  });

  test('no contact points when they cannot be listed', async () => {
    installBackend({ '/api/v1/provisioning/contact-points': { status: 403, body: grafana.forbiddenFolderCreate } });
    expect(await listContactPoints()).toEqual([]);
  });

  test('rule states by uid', async () => {
    installBackend({ [`${RULE_STATES_URL}?folder_uid=inferscope&rule_group=inferscope`]: ok(grafana.ruleStates) });
    const states = await fetchRuleStates('inferscope', 'inferscope');
    expect(states[render.ruleUids['latency-p0']]).toBe('firing');
    expect(states[render.ruleUids['gpumem-p1']]).toBe('normal');
    expect(Object.keys(states)).toHaveLength(render.ruleGroup.rules.length);
  });
});
