import React, { useCallback, useEffect, useRef, useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { config } from '@grafana/runtime';
import {
  Alert,
  Button,
  Combobox,
  ComboboxOption,
  ControlledCollapse,
  Field,
  LoadingPlaceholder,
  Stack,
  Switch,
  useStyles2,
} from '@grafana/ui';

import { fetchCatalog, ParamValues, renderRules } from '../../api/alerting';
import {
  fetchRuleStates,
  listContactPoints,
  provisionRules,
  ProvisionResult,
  RuleState,
} from '../../api/alertingGrafana';
import { runBacktest } from '../../api/backtest';
import { errorMessage } from '../../api/resource';
import { DataSourcePicker } from '../../components/DataSourcePicker/DataSourcePicker';
import { NoDataSourcePage, Page } from '../../components/Page/Page';
import { AppSettings } from '../../constants';
import { useDataSourceChoice } from '../../hooks/useDataSourceChoice';
import { useRequest } from '../../hooks/useRequest';
import { ParamsForm } from './ParamsForm';
import { RulesTable } from './RulesTable';
import { BacktestControls, BacktestView } from './Backtest';
import { downloadText } from './download';

interface Props {
  settings: AppSettings;
}

export const alertRulesTestIds = {
  container: 'data-testid alert-rules-container',
  result: 'data-testid alert-rules-result',
};

type Outcome = { kind: 'ok'; result: ProvisionResult } | { kind: 'error'; message: string };

const FILES: Array<{ key: 'prometheus' | 'alertmanager' | 'grafana-provisioning'; label: string; name: string }> = [
  { key: 'prometheus', label: 'Prometheus rule file', name: 'inferscope-rules.yml' },
  { key: 'alertmanager', label: 'Alertmanager config', name: 'inferscope-alertmanager.yml' },
  { key: 'grafana-provisioning', label: 'Grafana provisioning file', name: 'inferscope-grafana-rules.yaml' },
];

/** Links in notifications point at this Grafana unless the user sets another address. */
function defaultGrafanaUrl(): string {
  return (config.appUrl ?? '').replace(/\/+$/, '');
}

function AlertRules({ settings }: Props) {
  const s = useStyles2(getStyles);
  const selection = useDataSourceChoice(settings);
  const { uid } = selection;
  const [overrides, setOverrides] = useState<ParamValues>(() => {
    const url = defaultGrafanaUrl();
    const initial: ParamValues = {};
    if (url.startsWith('http')) {
      initial.grafanaUrl = url;
    }
    return initial;
  });
  const key = `${uid ?? ''}#${JSON.stringify(overrides)}`;
  const loaded = useRequest(uid ? { key, load: () => fetchCatalog(uid, overrides) } : undefined);
  const [contactPoints, setContactPoints] = useState<string[]>([]);
  const [states, setStates] = useState<Record<string, RuleState>>();
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>();
  // The last backtest with the parameters it ran with: figures for other parameters are marked stale.
  const [backtest, setBacktest] = useState<{ key: string; view: BacktestView }>();
  const backtestRun = useRef(0);

  // Contact points only matter once there is a catalog to provision.
  const hasDataSource = Boolean(uid);
  useEffect(() => {
    if (hasDataSource) {
      listContactPoints().then(setContactPoints);
    }
  }, [hasDataSource]);

  const answer = loaded?.kind === 'loaded' ? loaded.value : undefined;
  const folderUid = answer?.folder.uid;
  const group = answer?.group;
  const refreshStates = useCallback(() => {
    if (!folderUid || !group) {
      return;
    }
    fetchRuleStates(folderUid, group).then(setStates, () => setStates({}));
  }, [folderUid, group]);
  useEffect(refreshStates, [refreshStates]);

  const setParam = useCallback((name: string, value: string) => {
    setOutcome(undefined);
    setOverrides((o) => ({ ...o, [name]: value }));
  }, []);

  const provision = useCallback(
    async (extra: ParamValues = {}) => {
      if (!uid) {
        return;
      }
      const params = { ...overrides, ...extra };
      setBusy(true);
      setOutcome(undefined);
      try {
        const result = await provisionRules(uid, params);
        setOutcome({ kind: 'ok', result });
        if (Object.keys(extra).length > 0) {
          setOverrides(params);
        }
      } catch (err) {
        setOutcome({
          kind: 'error',
          message: errorMessage(err),
        });
      } finally {
        setBusy(false);
        refreshStates();
      }
    },
    [uid, overrides, refreshStates]
  );

  const startBacktest = useCallback(
    async (window: { from: string; to: string }) => {
      if (!uid) {
        return;
      }
      const run = ++backtestRun.current;
      setBacktest({ key, view: { kind: 'running' } });
      try {
        const answer = await runBacktest(uid, { params: overrides, from: window.from, to: window.to });
        if (run === backtestRun.current) {
          setBacktest({ key, view: { kind: 'loaded', answer, stale: false } });
        }
      } catch (err) {
        if (run === backtestRun.current) {
          setBacktest({ key, view: { kind: 'failed', message: errorMessage(err) } });
        }
      }
    },
    [uid, overrides, key]
  );
  useEffect(
    () => () => {
      // Answers arriving after the page is left are dropped.
      backtestRun.current++;
    },
    []
  );
  const backtestView: BacktestView | undefined =
    backtest?.view.kind === 'loaded' ? { ...backtest.view, stale: backtest.key !== key } : backtest?.view;

  const download = useCallback(
    async (key: (typeof FILES)[number]['key'], name: string) => {
      if (!uid) {
        return;
      }
      try {
        const rendered = await renderRules(uid, overrides);
        downloadText(name, rendered.files?.[key] ?? '');
      } catch (err) {
        setOutcome({ kind: 'error', message: errorMessage(err) });
      }
    },
    [uid, overrides]
  );

  if (selection.dataSources.length === 0) {
    return (
      <NoDataSourcePage testId={alertRulesTestIds.container}>
        The alert rules query the Inferscope data source. Add one, point it at your Prometheus, then come back.
      </NoDataSourcePage>
    );
  }

  const value = (name: string) => answer?.params.find((p) => p.name === name)?.value ?? '';
  const observation = value('observation') === 'true';
  // Grafana's contact points, and the one set even if Grafana does not know it (yet).
  const contactPointField = (param: 'contactP0' | 'contactP1', label: string, description: string) => {
    const current = value(param);
    const options: Array<ComboboxOption<string>> = Array.from(new Set([...contactPoints, current].filter(Boolean))).map(
      (n) => ({ label: n, value: n })
    );
    return (
      <Field label={label} description={description}>
        <Combobox
          id={`inferscope-contact-${param.slice(-2).toLowerCase()}`}
          width={32}
          createCustomValue
          options={options}
          value={current}
          onChange={(v) => setParam(param, v.value)}
        />
      </Field>
    );
  };
  const provisioned = states !== undefined && Object.keys(states).length > 0;

  return (
    <Page
      testId={alertRulesTestIds.container}
      lead={
        <>
          One rule catalog for inference services: P0 pages, P1 goes to chat, P2 is recorded only. Every rule ignores
          warm-up (a restart, a model load) and carries the model, version, instance or GPU, the current value and QPS,
          and a link to the last ten minutes of the latency panel. New rules start in observation mode: evaluated and
          recorded, never sent.
        </>
      }
    >
      <DataSourcePicker id="inferscope-rules-datasource" width={40} selection={selection} />

      {loaded?.kind === 'loading' && <LoadingPlaceholder text="Loading the rule catalog…" />}
      {loaded?.kind === 'failed' && (
        <Alert severity="error" title="The rule catalog could not be loaded">
          {errorMessage(loaded.error)}
        </Alert>
      )}
      {answer && (
        <>
          {answer.profile.notice && (
            <Alert severity="info" title="Metric profile">
              {answer.profile.notice}
            </Alert>
          )}
          <BacktestControls view={backtestView} onRun={startBacktest} />
          <RulesTable
            rules={answer.catalog}
            uids={answer.ruleUids}
            states={states}
            observation={observation}
            backtest={backtestView}
          />

          <h3 className={s.heading}>Where notifications go</h3>
          <Stack direction="row" gap={2} wrap="wrap">
            {contactPointField('contactP0', 'P0 contact point', 'phone and urgent chat')}
            {contactPointField('contactP1', 'P1 contact point', 'normal chat (P2 is never sent)')}
            <Field
              label="Observation mode"
              description="evaluate and record, send nothing (the brief: a new rule runs a week like this)"
            >
              <Switch
                id="inferscope-observation"
                value={observation}
                onChange={(e) => setParam('observation', String(e.currentTarget.checked))}
              />
            </Field>
          </Stack>

          <ControlledCollapse label="Thresholds and hold times" isOpen={false}>
            <ParamsForm params={answer.params} sections={['thresholds']} onChange={setParam} />
          </ControlledCollapse>
          <ControlledCollapse label="Folder, group, links and routing" isOpen={false}>
            <ParamsForm
              params={answer.params}
              sections={['placement', 'grafana', 'routing', 'metrics']}
              exclude={['contactP0', 'contactP1', 'observation']}
              onChange={setParam}
            />
          </ControlledCollapse>

          <Stack direction="row" gap={1} alignItems="center">
            <Button icon="bell" onClick={() => provision()} disabled={busy}>
              {busy ? 'Writing…' : 'Create or update the rules in Grafana'}
            </Button>
            {observation && provisioned && (
              <Button variant="secondary" onClick={() => provision({ observation: 'false' })} disabled={busy}>
                Leave observation mode
              </Button>
            )}
          </Stack>
          <p className={s.hint}>
            Writes the rule group &quot;{answer.group}&quot; into the folder &quot;{answer.folder.title}&quot; (created
            if missing). Only groups whose rules carry Inferscope&apos;s mark are ever replaced; the rules stay editable
            in Grafana.
          </p>
          {outcome && (
            <div data-testid={alertRulesTestIds.result}>
              {outcome.kind === 'ok' ? (
                <Alert
                  severity={outcome.result.kind === 'unchanged' ? 'info' : 'success'}
                  title={outcome.result.kind === 'unchanged' ? 'No change' : 'Done'}
                >
                  {outcome.result.message}
                </Alert>
              ) : (
                <Alert severity="error" title="The rules were not written">
                  {outcome.message}
                </Alert>
              )}
            </div>
          )}

          <h3 className={s.heading}>Export for Prometheus and Alertmanager</h3>
          <p className={s.hint}>
            The same catalog for a Prometheus that evaluates rules itself, with Alertmanager routing (P0 inhibits P1 and
            P2 of the same model and instance, or the same GPU). Also from the command line: inferscope rules export.
          </p>
          <Stack direction="row" gap={1}>
            {FILES.map((f) => (
              <Button key={f.key} variant="secondary" icon="download-alt" onClick={() => download(f.key, f.name)}>
                {f.label}
              </Button>
            ))}
          </Stack>
        </>
      )}
    </Page>
  );
}

export default AlertRules;

const getStyles = (theme: GrafanaTheme2) => ({
  heading: css({ marginTop: theme.spacing(3) }),
  hint: css({
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
    marginTop: theme.spacing(1),
  }),
});
