import React, { useState } from 'react';
import { useSearchParams } from 'react-router-dom';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Alert, Button, Field, Input, LoadingPlaceholder, Stack, useStyles2 } from '@grafana/ui';

import { fetchGate, GATE_DEFAULTS, GateReport, GateRequest } from '../../api/gate';
import { DataSourcePicker } from '../../components/DataSourcePicker/DataSourcePicker';
import { NoDataSourcePage, Page } from '../../components/Page/Page';
import { RequestErrorAlert, requestFailure } from '../../components/RequestError/RequestError';
import { Notices } from '../../components/Notices/Notices';
import { AppSettings } from '../../constants';
import { useDataSourceChoice } from '../../hooks/useDataSourceChoice';
import { useFormFields } from '../../hooks/useFormFields';
import { useRequest } from '../../hooks/useRequest';
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

const PROMETHEUS_HINT = 'Check that Prometheus is up and reachable from the Grafana server (Home page).';

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
  const selection = useDataSourceChoice(settings);
  const { uid } = selection;
  const [search] = useSearchParams();
  const [form, set] = useFormFields<GateRequest>(() => ({
    model: search.get('model') ?? '',
    baseline: search.get('baseline') ?? '',
    canary: search.get('canary') ?? '',
    window: search.get('window') ?? GATE_DEFAULTS.window,
    latencyThreshold: search.get('latencyThreshold') ?? GATE_DEFAULTS.latencyThreshold,
    memoryThreshold: search.get('memoryThreshold') ?? GATE_DEFAULTS.memoryThreshold,
  }));
  const [errors, setErrors] = useState<FormErrors>({});
  const [submitted, setSubmitted] = useState<{ request: GateRequest; attempt: number }>();
  const loaded = useRequest(
    uid && submitted
      ? { key: `${uid}#${JSON.stringify(submitted)}`, load: () => fetchGate(uid, submitted.request) }
      : undefined
  );

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    const errs = checkRequest(form);
    setErrors(errs);
    if (Object.keys(errs).length > 0) {
      return;
    }
    setSubmitted((prev) => ({ request: trimmed(form), attempt: (prev?.attempt ?? 0) + 1 }));
  };

  if (selection.dataSources.length === 0) {
    return (
      <NoDataSourcePage testId={gateTestIds.container}>
        The release gate queries Prometheus through the Inferscope data source. Add one, then come back.
      </NoDataSourcePage>
    );
  }

  const request = trimmed(form);

  return (
    <Page
      testId={gateTestIds.container}
      lead={
        <>
          Before a new model version takes full traffic, compare the canary with the current version over a window:
          latency worse by more than the limit (P95 and the window mean) or GPU memory up by more than its limit fails;
          too little traffic is never a pass.
        </>
      }
    >
      <form onSubmit={submit} aria-label="Release gate">
        <Stack direction="row" gap={1} wrap="wrap" alignItems="flex-start">
          <DataSourcePicker id="inferscope-gate-datasource" width={28} selection={selection} />
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
          <RequestErrorAlert testId={gateTestIds.error} {...requestFailure(loaded.error, PROMETHEUS_HINT)} />
        )}
        {loaded?.kind === 'loaded' && <GateResult report={loaded.value} />}
      </div>

      {uid && <PipelineBox uid={uid} request={request} />}
    </Page>
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
      <Notices notices={report.notices} />
    </>
  );
}

export default Gate;

const getStyles = (theme: GrafanaTheme2) => ({
  section: css({ marginTop: theme.spacing(2) }),
  hint: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
});
