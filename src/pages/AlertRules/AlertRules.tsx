import React, { useCallback, useState } from 'react';
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

import { fetchCatalog, ParamValues } from '../../api/alerting';
import { errorMessage } from '../../api/resource';
import { DataSourcePicker } from '../../components/DataSourcePicker/DataSourcePicker';
import { NoDataSourcePage, Page } from '../../components/Page/Page';
import { AppSettings } from '../../constants';
import { useDataSourceChoice } from '../../hooks/useDataSourceChoice';
import { useRequest } from '../../hooks/useRequest';
import { ParamsForm } from './ParamsForm';
import { RulesTable } from './RulesTable';
import { BacktestControls } from './Backtest';
import { Outcome, useBacktest, useContactPoints, useDownload, useProvision, useRuleStates } from './useAlertRules';

interface Props {
  settings: AppSettings;
}

export const alertRulesTestIds = {
  container: 'data-testid alert-rules-container',
  result: 'data-testid alert-rules-result',
};

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
  const [overrides, setOverrides] = useState<ParamValues>(initialOverrides);
  const key = `${uid ?? ''}#${JSON.stringify(overrides)}`;
  const loaded = useRequest(uid ? { key, load: () => fetchCatalog(uid, overrides) } : undefined);
  const answer = loaded?.kind === 'loaded' ? loaded.value : undefined;
  const contactPoints = useContactPoints(Boolean(uid));
  const { states, refresh: refreshStates } = useRuleStates(answer?.folder.uid, answer?.group);
  const { busy, outcome, setOutcome, provision } = useProvision(uid, overrides, setOverrides, refreshStates);
  const backtest = useBacktest(uid, overrides, key);
  const download = useDownload(uid, overrides, setOutcome);

  const setParam = useCallback(
    (name: string, value: string) => {
      setOutcome(undefined);
      setOverrides((o) => ({ ...o, [name]: value }));
    },
    [setOutcome]
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
          <BacktestControls view={backtest.view} onRun={backtest.start} />
          <RulesTable
            rules={answer.catalog}
            uids={answer.ruleUids}
            states={states}
            observation={observation}
            backtest={backtest.view}
          />

          <h3 className={s.heading}>Where notifications go</h3>
          <Stack direction="row" gap={2} wrap="wrap">
            <ContactPointField
              param="contactP0"
              label="P0 contact point"
              description="phone and urgent chat"
              current={value('contactP0')}
              known={contactPoints}
              onChange={setParam}
            />
            <ContactPointField
              param="contactP1"
              label="P1 contact point"
              description="normal chat (P2 is never sent)"
              current={value('contactP1')}
              known={contactPoints}
              onChange={setParam}
            />
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
          {outcome && <OutcomeView outcome={outcome} />}

          <ExportSection onDownload={download} />
        </>
      )}
    </Page>
  );
}

/** Links in notifications point at this Grafana unless the user sets another address. */
function initialOverrides(): ParamValues {
  const url = defaultGrafanaUrl();
  return url.startsWith('http') ? { grafanaUrl: url } : {};
}

/** Grafana's contact points, and the one set even if Grafana does not know it (yet). */
function ContactPointField(props: {
  param: 'contactP0' | 'contactP1';
  label: string;
  description: string;
  current: string;
  known: string[];
  onChange: (name: string, value: string) => void;
}) {
  const { param, current } = props;
  const options: Array<ComboboxOption<string>> = Array.from(new Set([...props.known, current].filter(Boolean))).map(
    (n) => ({ label: n, value: n })
  );
  return (
    <Field label={props.label} description={props.description}>
      <Combobox
        id={`inferscope-contact-${param.slice(-2).toLowerCase()}`}
        width={32}
        createCustomValue
        options={options}
        value={current}
        onChange={(v) => props.onChange(param, v.value)}
      />
    </Field>
  );
}

/** What the last write (or download) did. */
function OutcomeView({ outcome }: { outcome: Outcome }) {
  return (
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
  );
}

/** The same catalog as files for a Prometheus that evaluates rules itself. */
function ExportSection({ onDownload }: { onDownload: (file: (typeof FILES)[number]['key'], name: string) => void }) {
  const s = useStyles2(getStyles);
  return (
    <>
      <h3 className={s.heading}>Export for Prometheus and Alertmanager</h3>
      <p className={s.hint}>
        The same catalog for a Prometheus that evaluates rules itself, with Alertmanager routing (P0 inhibits P1 and P2
        of the same model and instance, or the same GPU). Also from the command line: inferscope rules export.
      </p>
      <Stack direction="row" gap={1}>
        {FILES.map((f) => (
          <Button key={f.key} variant="secondary" icon="download-alt" onClick={() => onDownload(f.key, f.name)}>
            {f.label}
          </Button>
        ))}
      </Stack>
    </>
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
