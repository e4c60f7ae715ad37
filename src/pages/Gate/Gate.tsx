import React, { useEffect, useMemo, useState } from 'react';
import { useSearchParams } from 'react-router-dom';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { PluginPage } from '@grafana/runtime';
import {
  Alert,
  Button,
  Combobox,
  ComboboxOption,
  Field,
  Input,
  LinkButton,
  LoadingPlaceholder,
  Stack,
  useStyles2,
} from '@grafana/ui';

import { chooseDataSource, listInferscopeDataSources, NEW_DATASOURCE_URL } from '../../api/datasources';
import { fetchGate, GATE_DEFAULTS, GateReport, GateRequest, GateRequestError } from '../../api/gate';
import { AppSettings } from '../../constants';
import { formatTime } from '../Triage/format';
import { ChecksTable } from './ChecksTable';
import { PipelineBox } from './PipelineBox';

interface Props {
  settings: AppSettings;
}

export const gateTestIds = {
  container: 'data-testid gate-container',
  verdict: 'data-testid gate-verdict',
  error: 'data-testid gate-error',
};

type Loaded =
  | { kind: 'loading' }
  | { kind: 'loaded'; report: GateReport }
  | { kind: 'failed'; title: string; message: string; hint?: string };

function failure(err: unknown): Extract<Loaded, { kind: 'failed' }> {
  const message = err instanceof Error ? err.message : String(err);
  switch (err instanceof GateRequestError ? err.status : undefined) {
    case 400:
      return { kind: 'failed', title: 'The data source refused the request', message };
    case 401:
      return {
        kind: 'failed',
        title: 'Prometheus refused the credentials',
        message,
        hint: 'Check the authentication in the data source settings.',
      };
    case 502:
    case 504:
      return {
        kind: 'failed',
        title: 'Prometheus could not be read',
        message,
        hint: 'Check that Prometheus is up and reachable from the Grafana server (Home page).',
      };
    default:
      return { kind: 'failed', title: 'The data source did not answer', message };
  }
}

const verdictView = {
  pass: { severity: 'success', title: 'Pass: the canary may take the traffic' },
  fail: { severity: 'error', title: 'Fail: the canary is worse than allowed' },
  insufficient_data: { severity: 'warning', title: 'Insufficient data: too little traffic to decide' },
} as const;

type FormErrors = Partial<Record<keyof GateRequest, string>>;

function checkRequest(r: GateRequest): FormErrors {
  const errors: FormErrors = {};
  if (!r.model.trim()) {
    errors.model = 'model: name the model';
  }
  if (!r.baseline.trim()) {
    errors.baseline = 'baseline: name the current version';
  }
  if (!r.canary.trim()) {
    errors.canary = 'canary: name the new version';
  } else if (r.canary.trim() === r.baseline.trim()) {
    errors.canary = 'canary: must differ from the baseline version';
  }
  return errors;
}

function trimmed(r: GateRequest): GateRequest {
  return {
    model: r.model.trim(),
    baseline: r.baseline.trim(),
    canary: r.canary.trim(),
    window: r.window.trim() || GATE_DEFAULTS.window,
    latencyThreshold: r.latencyThreshold.trim() || GATE_DEFAULTS.latencyThreshold,
    memoryThreshold: r.memoryThreshold.trim() || GATE_DEFAULTS.memoryThreshold,
  };
}

function Gate({ settings }: Props) {
  const s = useStyles2(getStyles);
  const dataSources = useMemo(() => listInferscopeDataSources(), []);
  const choice = useMemo(() => chooseDataSource(dataSources, settings.datasourceUid), [dataSources, settings]);
  const [uid, setUid] = useState<string | undefined>(choice.selected?.uid);
  const [search] = useSearchParams();
  const [form, setForm] = useState<GateRequest>(() => ({
    model: search.get('model') ?? '',
    baseline: search.get('baseline') ?? '',
    canary: search.get('canary') ?? '',
    window: search.get('window') ?? GATE_DEFAULTS.window,
    latencyThreshold: search.get('latencyThreshold') ?? GATE_DEFAULTS.latencyThreshold,
    memoryThreshold: search.get('memoryThreshold') ?? GATE_DEFAULTS.memoryThreshold,
  }));
  const [errors, setErrors] = useState<FormErrors>({});
  const [submitted, setSubmitted] = useState<{ request: GateRequest; attempt: number }>();
  const [result, setResult] = useState<{ key: string; state: Loaded }>();
  const key = `${uid ?? ''}#${JSON.stringify(submitted)}`;

  useEffect(() => {
    if (!uid || !submitted) {
      return;
    }
    let current = true;
    fetchGate(uid, submitted.request).then(
      (report) => current && setResult({ key, state: { kind: 'loaded', report } }),
      (err: unknown) => current && setResult({ key, state: failure(err) })
    );
    return () => {
      current = false;
    };
  }, [uid, submitted, key]);
  const loaded: Loaded | undefined = submitted ? (result?.key === key ? result.state : { kind: 'loading' }) : undefined;

  const set = (name: keyof GateRequest) => (e: React.FormEvent<HTMLInputElement>) => {
    const value = e.currentTarget.value;
    setForm((f) => ({ ...f, [name]: value }));
  };

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    const errs = checkRequest(form);
    setErrors(errs);
    if (Object.keys(errs).length > 0) {
      return;
    }
    setSubmitted((prev) => ({ request: trimmed(form), attempt: (prev?.attempt ?? 0) + 1 }));
  };

  if (dataSources.length === 0) {
    return (
      <PluginPage>
        <div data-testid={gateTestIds.container}>
          <Alert severity="warning" title="No Inferscope data source">
            <p>The release gate queries Prometheus through the Inferscope data source. Add one, then come back.</p>
            <LinkButton href={NEW_DATASOURCE_URL} icon="plus">
              Add data source
            </LinkButton>
          </Alert>
        </div>
      </PluginPage>
    );
  }

  const dsOptions: Array<ComboboxOption<string>> = dataSources.map((ds) => ({ label: ds.name, value: ds.uid }));
  const request = trimmed(form);

  return (
    <PluginPage>
      <div data-testid={gateTestIds.container} className={s.page}>
        <p className={s.lead}>
          Before a new model version takes full traffic, compare the canary with the current version over a window:
          latency worse by more than the limit (P95 and the window mean) or GPU memory up by more than its limit fails;
          too little traffic is never a pass.
        </p>
        <form onSubmit={submit} aria-label="Release gate">
          <Stack direction="row" gap={1} wrap="wrap" alignItems="flex-start">
            <Field label="Data source">
              <Combobox
                id="inferscope-gate-datasource"
                width={28}
                options={dsOptions}
                value={uid}
                onChange={(v) => setUid(v.value)}
              />
            </Field>
            <Field label="Model" invalid={!!errors.model} error={errors.model} required>
              <Input id="gate-model" width={24} value={form.model} onChange={set('model')} />
            </Field>
            <Field label="Baseline version" invalid={!!errors.baseline} error={errors.baseline} required>
              <Input id="gate-baseline" width={16} value={form.baseline} onChange={set('baseline')} />
            </Field>
            <Field label="Canary version" invalid={!!errors.canary} error={errors.canary} required>
              <Input id="gate-canary" width={16} value={form.canary} onChange={set('canary')} />
            </Field>
            <Field label="Window" description="Prometheus duration">
              <Input id="gate-window" width={10} value={form.window} onChange={set('window')} />
            </Field>
            <Field label="Latency threshold" description="10% or 0.1">
              <Input id="gate-latency" width={10} value={form.latencyThreshold} onChange={set('latencyThreshold')} />
            </Field>
            <Field label="Memory threshold" description="5% or 0.05">
              <Input id="gate-memory" width={10} value={form.memoryThreshold} onChange={set('memoryThreshold')} />
            </Field>
          </Stack>
          <Button type="submit" icon="check-circle" disabled={loaded?.kind === 'loading'}>
            {loaded?.kind === 'loading' ? 'Comparing…' : 'Run the gate'}
          </Button>
        </form>

        <div className={s.section}>
          {loaded?.kind === 'loading' && <LoadingPlaceholder text="Comparing the canary with the baseline…" />}
          {loaded?.kind === 'failed' && (
            <div data-testid={gateTestIds.error}>
              <Alert severity="error" title={loaded.title}>
                <p>{loaded.message}</p>
                {loaded.hint && <p>{loaded.hint}</p>}
              </Alert>
            </div>
          )}
          {loaded?.kind === 'loaded' && <GateResult report={loaded.report} />}
        </div>

        {uid && <PipelineBox uid={uid} request={request} />}
      </div>
    </PluginPage>
  );
}

function GateResult({ report }: { report: GateReport }) {
  const s = useStyles2(getStyles);
  const view = verdictView[report.verdict];
  return (
    <>
      <div data-testid={gateTestIds.verdict}>
        <Alert severity={view.severity} title={view.title}>
          <p>{report.reason}</p>
          <p className={s.hint}>
            {report.model} {report.canary} (canary) vs {report.baseline}: {report.window.duration} from{' '}
            {formatTime(report.window.start)} to {formatTime(report.window.end)}.
          </p>
        </Alert>
      </div>
      <ChecksTable checks={report.checks} />
      {report.notices && report.notices.length > 0 && (
        <ul className={s.hint} aria-label="Notices">
          {report.notices.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
    </>
  );
}

export default Gate;

const getStyles = (theme: GrafanaTheme2) => ({
  page: css({ maxWidth: 1200 }),
  lead: css({ color: theme.colors.text.secondary, maxWidth: 900 }),
  section: css({ marginTop: theme.spacing(2) }),
  hint: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
});
