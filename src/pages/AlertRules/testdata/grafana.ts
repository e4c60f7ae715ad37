// Grafana's answers to the calls the Alert rules page makes, in the shapes Grafana 12 sends
// them (bodies from its HTTP handlers: the folder API, the alerting provisioning API, the
// access-control middleware's 403 and the Prometheus-style rules API).
import render from './rules-render.json';

export const folderFound = {
  id: 7,
  uid: 'inferscope',
  orgId: 1,
  title: 'Inferscope',
  url: '/dashboards/f/inferscope/inferscope',
  hasAcl: false,
  canSave: true,
  canEdit: true,
  canAdmin: true,
  canDelete: true,
  createdBy: 'admin',
  created: '2026-11-30T06:00:00Z',
  updatedBy: 'admin',
  updated: '2026-11-30T06:00:00Z',
  version: 1,
};

export const folderNotFound = {
  message: 'folder not found',
  messageId: 'folder.notFound',
  statusCode: 404,
  traceID: '',
};

export const ruleGroupNotFound = {
  message: 'rule group not found',
  messageId: 'alerting.ruleGroupNotFound',
  statusCode: 404,
  traceID: '',
};

export const muteTimingNotFound = {
  message: 'time interval not found',
  messageId: 'alerting.notifications.time-intervals.notFound',
  statusCode: 404,
  traceID: '',
};

export const muteTimingFound = {
  name: 'inferscope-record-only',
  time_intervals: [{ times: [{ start_time: '00:00', end_time: '24:00' }] }],
  version: 'd5f0a5a3c6e4b7f1',
  provenance: '',
};

/** The rule group as GET …/rule-groups/{group} returns it after the page wrote it. */
export const ruleGroupAsStored = {
  ...render.ruleGroup,
  rules: render.ruleGroup.rules.map((r, i) => ({
    ...r,
    id: 40 + i,
    updated: '2026-11-30T06:05:00Z',
    provenance: '',
    for: r.for === '3m' ? '3m0s' : r.for,
  })),
};

/** A group of the same name that someone else made. */
export const foreignRuleGroup = {
  title: 'inferscope',
  folderUid: 'inferscope',
  interval: 60,
  rules: [
    {
      id: 12,
      uid: 'team-search-latency',
      orgID: 1,
      folderUID: 'inferscope',
      ruleGroup: 'inferscope',
      title: 'Search latency',
      condition: 'B',
      data: [],
      noDataState: 'NoData',
      execErrState: 'Error',
      for: '5m0s',
      labels: { team: 'search' },
      annotations: {},
      provenance: '',
      updated: '2026-11-01T09:00:00Z',
    },
  ],
};

export const forbiddenFolderCreate = {
  accessErrorId: 'ACE4185362910',
  message: "You'll need additional permissions to perform this action. Permissions needed: folders:create",
  title: 'Access denied',
};

export const forbiddenRuleGroupWrite = {
  accessErrorId: 'ACE0738261945',
  message:
    "You'll need additional permissions to perform this action. Permissions needed: any(alert.provisioning:write, alert.rules.provisioning:write, all(alert.rules:read, folders:read, alert.provisioning.provenance:write, any(alert.rules:write, alert.rules:create, alert.rules:delete)))",
  title: 'Access denied',
};

export const conflictRuleGroupWrite = {
  message: 'failed to update alert rule group: version conflict: the rules were changed by another request',
  messageId: 'alerting.optimisticLock',
  statusCode: 409,
  traceID: '',
};

export const contactPoints = [
  { uid: 'cp-email', name: 'grafana-default-email', type: 'email', settings: { addresses: '<example@email.com>' } },
  { uid: 'cp-oncall-1', name: 'oncall-phone', type: 'webhook', settings: { url: 'https://oncall.example/hook' } },
  { uid: 'cp-oncall-2', name: 'oncall-phone', type: 'slack', settings: { recipient: '#sev1' } },
  { uid: 'cp-chat', name: 'ml-chat', type: 'slack', settings: { recipient: '#ml-serving' } },
];

/** GET /api/prometheus/grafana/api/v1/rules for the group: the latency P0 firing, the rest normal. */
export const ruleStates = {
  status: 'success',
  data: {
    groups: [
      {
        name: 'inferscope',
        file: 'Inferscope',
        folderUid: 'inferscope',
        interval: 60,
        rules: render.ruleGroup.rules.map((r) => ({
          name: r.title,
          uid: r.uid,
          state: r.uid === render.ruleUids['latency-p0'] ? 'firing' : 'inactive',
          health: 'ok',
          type: 'alerting',
          labels: r.labels,
        })),
      },
    ],
  },
};
