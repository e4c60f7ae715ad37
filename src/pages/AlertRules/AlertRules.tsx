import React, { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { config, PluginPage } from '@grafana/runtime';
import {
  Alert,
  Button,
  Combobox,
  ComboboxOption,
  ControlledCollapse,
  Field,
  LinkButton,
  LoadingPlaceholder,
  Stack,
  Switch,
  useStyles2,
} from '@grafana/ui';

import { fetchCatalog, ParamValues, renderRules, RulesAnswer } from '../../api/alerting';
import {
  fetchRuleStates,
  listContactPoints,
  ProvisionError,
  provisionRules,
  ProvisionResult,
  RuleState,
} from '../../api/alertingGrafana';
import { runBacktest } from '../../api/backtest';
import { chooseDataSource, listInferscopeDataSources, NEW_DATASOURCE_URL } from '../../api/datasources';
import { AppSettings } from '../../constants';
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

type Loaded = { kind: 'loading' } | { kind: 'loaded'; answer: RulesAnswer } | { kind: 'failed'; message: string };

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
  const dataSources = useMemo(() => listInferscopeDataSources(), []);
  const choice = useMemo(() => chooseDataSource(dataSources, settings.datasourceUid), [dataSources, settings]);
  const [uid, setUid] = useState<string | undefined>(choice.selected?.uid);
  const [overrides, setOverrides] = useState<ParamValues>(() => {
    const url = defaultGrafanaUrl();
    const initial: ParamValues = {};
    if (url.startsWith('http')) {
      initial.grafanaUrl = url;
    }
    return initial;
  });
  // Each answer is tagged with the request it belongs to, so a late answer for earlier
  // parameters is never shown as the current one.
  const [result, setResult] = useState<{ key: string; state: Loaded }>();
  const key = `${uid ?? ''}#${JSON.stringify(overrides)}`;
  const [contactPoints, setContactPoints] = useState<string[]>([]);
  const [states, setStates] = useState<Record<string, RuleState>>();
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>();
  // The last backtest with the parameters it ran with: figures for other parameters are marked stale.
  const [backtest, setBacktest] = useState<{ key: string; view: BacktestView }>();
  const backtestRun = useRef(0);

  useEffect(() => {
    if (!uid) {
      return;
    }
    let current = true;
    fetchCatalog(uid, overrides).then(
      (answer) => current && setResult({ key, state: { kind: 'loaded', answer } }),
      (err: unknown) =>
        current &&
        setResult({ key, state: { kind: 'failed', message: err instanceof Error ? err.message : String(err) } })
    );
    return () => {
      current = false;
    };
  }, [uid, overrides, key]);
  const loaded: Loaded = result?.key === key ? result.state : { kind: 'loading' };

  useEffect(() => {
    listContactPoints().then(setContactPoints);
  }, []);

  const answer = loaded.kind === 'loaded' ? loaded.answer : undefined;
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
          message: err instanceof ProvisionError || err instanceof Error ? err.message : String(err),
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
          setBacktest({ key, view: { kind: 'failed', message: err instanceof Error ? err.message : String(err) } });
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
        setOutcome({ kind: 'error', message: err instanceof Error ? err.message : String(err) });
      }
    },
    [uid, overrides]
  );

  if (dataSources.length === 0) {
    return (
      <PluginPage>
        <div data-testid={alertRulesTestIds.container}>
          <Alert severity="warning" title="No Inferscope data source">
            <p>
              The alert rules query the Inferscope data source. Add one, point it at your Prometheus, then come back.
            </p>
            <LinkButton href={NEW_DATASOURCE_URL} icon="plus">
              Add data source
            </LinkButton>
          </Alert>
        </div>
      </PluginPage>
    );
  }

  const dsOptions: Array<ComboboxOption<string>> = dataSources.map((ds) => ({ label: ds.name, value: ds.uid }));
  const value = (name: string) => answer?.params.find((p) => p.name === name)?.value ?? '';
  const observation = value('observation') === 'true';
  const cpOptions = (current: string): Array<ComboboxOption<string>> =>
    Array.from(new Set([...contactPoints, current].filter(Boolean))).map((n) => ({ label: n, value: n }));
  const provisioned = states !== undefined && Object.keys(states).length > 0;

  return (
    <PluginPage>
      <div data-testid={alertRulesTestIds.container} className={s.page}>
        <p className={s.lead}>
          One rule catalog for inference services: P0 pages, P1 goes to chat, P2 is recorded only. Every rule ignores
          warm-up (a restart, a model load) and carries the model, version, instance or GPU, the current value and QPS,
          and a link to the last ten minutes of the latency panel. New rules start in observation mode: evaluated and
          recorded, never sent.
        </p>
        <Field label="Data source">
          <Combobox
            id="inferscope-rules-datasource"
            width={40}
            options={dsOptions}
            value={uid}
            onChange={(v) => setUid(v.value)}
          />
        </Field>

        {loaded.kind === 'loading' && <LoadingPlaceholder text="Loading the rule catalog…" />}
        {loaded.kind === 'failed' && (
          <Alert severity="error" title="The rule catalog could not be loaded">
            {loaded.message}
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
              <Field label="P0 contact point" description="phone and urgent chat">
                <Combobox
                  id="inferscope-contact-p0"
                  width={32}
                  createCustomValue
                  options={cpOptions(value('contactP0'))}
                  value={value('contactP0')}
                  onChange={(v) => setParam('contactP0', v.value)}
                />
              </Field>
              <Field label="P1 contact point" description="normal chat (P2 is never sent)">
                <Combobox
                  id="inferscope-contact-p1"
                  width={32}
                  createCustomValue
                  options={cpOptions(value('contactP1'))}
                  value={value('contactP1')}
                  onChange={(v) => setParam('contactP1', v.value)}
                />
              </Field>
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
              Writes the rule group &quot;{answer.group}&quot; into the folder &quot;{answer.folder.title}&quot;
              (created if missing). Only groups whose rules carry Inferscope&apos;s mark are ever replaced; the rules
              stay editable in Grafana.
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
              The same catalog for a Prometheus that evaluates rules itself, with Alertmanager routing (P0 inhibits P1
              and P2 of the same model and instance, or the same GPU). Also from the command line: inferscope rules
              export.
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
      </div>
    </PluginPage>
  );
}

export default AlertRules;

const getStyles = (theme: GrafanaTheme2) => ({
  page: css({ maxWidth: 1200 }),
  lead: css({ color: theme.colors.text.secondary, maxWidth: 900 }),
  heading: css({ marginTop: theme.spacing(3) }),
  hint: css({
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
    marginTop: theme.spacing(1),
  }),
});
