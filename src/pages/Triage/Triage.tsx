import React, { useEffect, useMemo, useState } from 'react';
import { useSearchParams } from 'react-router-dom';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { PluginPage } from '@grafana/runtime';
import {
  Alert,
  Badge,
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
import { fetchTriage, TriageAnswer, TriageRequest, TriageRequestError } from '../../api/triage';
import { AppSettings } from '../../constants';
import { CauseCard } from './CauseCard';
import { checkForm, formFromSearch, isNodeForm, searchFromForm, TriageForm } from './form';
import { formatTime } from './format';

interface Props {
  settings: AppSettings;
}

export const triageTestIds = {
  container: 'data-testid triage-container',
  verdict: 'data-testid triage-verdict',
  error: 'data-testid triage-error',
  nodeHint: 'data-testid triage-node-hint',
};

type Submitted = { request: TriageRequest; attempt: number };

type Loaded =
  | { kind: 'loading' }
  | { kind: 'loaded'; answer: TriageAnswer }
  | { kind: 'failed'; title: string; message: string; hint?: string };

function failure(err: unknown): Extract<Loaded, { kind: 'failed' }> {
  const message = err instanceof Error ? err.message : String(err);
  const status = err instanceof TriageRequestError ? err.status : undefined;
  switch (status) {
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
        hint: 'The triage queries Prometheus through the data source: check that Prometheus is up and reachable from the Grafana server (Home page).',
      };
    default:
      return { kind: 'failed', title: 'The data source did not answer', message };
  }
}

const verdictView = {
  diagnosed: { severity: 'warning', title: (a: TriageAnswer) => `Diagnosis: ${a.causes[0]?.title ?? 'see below'}` },
  no_direction: { severity: 'info', title: () => 'No clear direction' },
  healthy: { severity: 'success', title: () => 'Healthy: nothing stands out' },
} as const;

function Triage({ settings }: Props) {
  const s = useStyles2(getStyles);
  const dataSources = useMemo(() => listInferscopeDataSources(), []);
  const choice = useMemo(() => chooseDataSource(dataSources, settings.datasourceUid), [dataSources, settings]);
  const [uid, setUid] = useState<string | undefined>(choice.selected?.uid);
  const [search, setSearch] = useSearchParams();
  // The page opens on the URL's form and, when it names a model or a node (an alert's link),
  // runs it at once.
  const [initial] = useState(() => {
    const form = formFromSearch(search);
    return { form, check: form.model || form.node ? checkForm(form) : undefined };
  });
  const [form, setForm] = useState<TriageForm>(initial.form);
  const [errors, setErrors] = useState(initial.check && !initial.check.ok ? initial.check.errors : {});
  const [submitted, setSubmitted] = useState<Submitted | undefined>(
    initial.check?.ok ? { request: initial.check.request, attempt: 0 } : undefined
  );
  const [result, setResult] = useState<{ key: string; state: Loaded }>();
  const key = `${uid ?? ''}#${JSON.stringify(submitted)}`;
  const byNode = isNodeForm(form);

  useEffect(() => {
    if (!uid || !submitted) {
      return;
    }
    let current = true;
    fetchTriage(uid, submitted.request).then(
      (answer) => current && setResult({ key, state: { kind: 'loaded', answer } }),
      (err: unknown) => current && setResult({ key, state: failure(err) })
    );
    return () => {
      current = false;
    };
  }, [uid, submitted, key]);
  const loaded: Loaded | undefined = submitted ? (result?.key === key ? result.state : { kind: 'loading' }) : undefined;

  const set = (name: keyof TriageForm) => (e: React.FormEvent<HTMLInputElement>) => {
    const value = e.currentTarget.value;
    setForm((f) => ({ ...f, [name]: value }));
  };

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    const check = checkForm(form);
    if (!check.ok) {
      setErrors(check.errors);
      return;
    }
    setErrors({});
    // The URL reopens this triage; Grafana's orgId stays.
    setSearch(
      (prev) => {
        const next = new URLSearchParams(searchFromForm(form));
        const org = prev.get('orgId');
        if (org) {
          next.set('orgId', org);
        }
        return next;
      },
      { replace: true }
    );
    setSubmitted((prev) => ({ request: check.request, attempt: (prev?.attempt ?? 0) + 1 }));
  };

  if (dataSources.length === 0) {
    return (
      <PluginPage>
        <div data-testid={triageTestIds.container}>
          <Alert severity="warning" title="No Inferscope data source">
            <p>The triage queries Prometheus through the Inferscope data source. Add one, then come back.</p>
            <LinkButton href={NEW_DATASOURCE_URL} icon="plus">
              Add data source
            </LinkButton>
          </Alert>
        </div>
      </PluginPage>
    );
  }

  const dsOptions: Array<ComboboxOption<string>> = dataSources.map((ds) => ({ label: ds.name, value: ds.uid }));

  return (
    <PluginPage>
      <div data-testid={triageTestIds.container} className={s.page}>
        <p className={s.lead}>
          The fifteen-minute triage path as one call: which model and version jumped, queue or compute, GPU resources,
          framework internals and inputs, network and warm-up, each compared with the time before; the causes with
          evidence come back ranked, with the next step and the dashboard panels to open.
        </p>
        {byNode && (
          <p className={s.hint} data-testid={triageTestIds.nodeHint}>
            {form.gpu.trim() ? `GPU ${form.gpu.trim()} of node ${form.node.trim()}` : `Node ${form.node.trim()}`}: every
            model served on the node is triaged and their causes ranked together
            {form.gpu.trim() ? '; the GPU readings (memory, utilisation, idle, XID) are of that GPU' : ''}. Name a model
            to triage only that one.
          </p>
        )}
        <form onSubmit={submit} aria-label="Triage">
          <Stack direction="row" gap={1} wrap="wrap" alignItems="flex-start">
            <Field label="Data source">
              <Combobox
                id="inferscope-triage-datasource"
                width={28}
                options={dsOptions}
                value={uid}
                onChange={(v) => setUid(v.value)}
              />
            </Field>
            <Field
              label="Model"
              description={form.node.trim() ? 'optional with a node' : undefined}
              invalid={!!errors.model}
              error={errors.model}
              required={!form.node.trim()}
            >
              <Input id="triage-model" width={24} value={form.model} onChange={set('model')} />
            </Field>
            <Field label="Version" description="optional" invalid={!!errors.version} error={errors.version}>
              <Input id="triage-version" width={16} value={form.version} onChange={set('version')} />
            </Field>
            <Field label="Instance" description="optional">
              <Input id="triage-instance" width={20} value={form.instance} onChange={set('instance')} />
            </Field>
            <Field label="Node" description="a GPU alert's node">
              <Input id="triage-node" width={16} value={form.node} onChange={set('node')} />
            </Field>
            <Field label="GPU" description="index on the node" invalid={!!errors.gpu} error={errors.gpu}>
              <Input id="triage-gpu" width={8} value={form.gpu} onChange={set('gpu')} />
            </Field>
            <Field label="From" description="now-15m, RFC 3339 or ms" invalid={!!errors.from} error={errors.from}>
              <Input id="triage-from" width={24} value={form.from} onChange={set('from')} />
            </Field>
            <Field label="To" description="now, RFC 3339 or ms" invalid={!!errors.to} error={errors.to}>
              <Input id="triage-to" width={24} value={form.to} onChange={set('to')} />
            </Field>
          </Stack>
          <Button type="submit" icon="search" disabled={loaded?.kind === 'loading'}>
            {loaded?.kind === 'loading' ? 'Running the triage…' : 'Run triage'}
          </Button>
        </form>

        <div className={s.section}>
          {loaded?.kind === 'loading' && <LoadingPlaceholder text="Running the five steps against Prometheus…" />}
          {loaded?.kind === 'failed' && (
            <div data-testid={triageTestIds.error}>
              <Alert severity="error" title={loaded.title}>
                <p>{loaded.message}</p>
                {loaded.hint && <p>{loaded.hint}</p>}
              </Alert>
            </div>
          )}
          {loaded?.kind === 'loaded' && <TriageResult answer={loaded.answer} />}
        </div>
      </div>
    </PluginPage>
  );
}

function TriageResult({ answer }: { answer: TriageAnswer }) {
  const s = useStyles2(getStyles);
  const view = verdictView[answer.verdict] ?? verdictView.no_direction;
  const causeTitle = (id: string) => answer.causes.find((c) => c.id === id)?.title ?? id.replace(/_/g, ' ');
  const subject = answerSubject(answer);
  return (
    <>
      <div data-testid={triageTestIds.verdict}>
        <Alert severity={view.severity} title={view.title(answer)}>
          <p>{answer.summary}</p>
          <p className={s.hint}>
            {subject}: {answer.window.duration} from {formatTime(answer.window.start)} to{' '}
            {formatTime(answer.window.end)}, compared with the {answer.before.duration} from{' '}
            {formatTime(answer.before.start)} to {formatTime(answer.before.end)}.
          </p>
        </Alert>
      </div>

      {answer.causes.length > 0 && (
        <>
          <h3 className={s.heading}>Ranked causes</h3>
          {answer.causes.map((c, i) => (
            <CauseCard key={c.id} cause={c} rank={i + 1} />
          ))}
        </>
      )}

      <h3 className={s.heading}>The five steps</h3>
      <ol className={s.steps} aria-label="Triage steps">
        {answer.steps.map((st) => (
          <li key={st.step} aria-label={st.title} className={s.step}>
            <div>
              <strong>
                {st.step}. {st.title}
              </strong>{' '}
              <span className={s.hint}>minutes {st.minutes}</span>
            </div>
            <div>{st.finding}</div>
            {st.causes.length > 0 && (
              <Stack direction="row" gap={0.5}>
                {st.causes.map((id) => (
                  <Badge key={id} color="orange" text={causeTitle(id)} />
                ))}
              </Stack>
            )}
          </li>
        ))}
      </ol>

      {answer.notices && answer.notices.length > 0 && (
        <ul className={s.hint} aria-label="Notices">
          {answer.notices.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
    </>
  );
}

/** What the answer is about: the model (and version) and where, or the node, its GPU and models. */
export function answerSubject(a: TriageAnswer): string {
  const gpu = a.gpu ? `, GPU ${a.gpu}` : '';
  if (!a.model && a.node) {
    const models = a.models && a.models.length > 0 ? a.models.join(', ') : 'no model served';
    return `Node ${a.node}${gpu} (${models})`;
  }
  const what = [a.model, a.version].filter(Boolean).join(' ');
  const where = a.instance || (a.node ? `node ${a.node}` : 'all instances');
  return `${what} on ${where}${gpu}`;
}

export default Triage;

const getStyles = (theme: GrafanaTheme2) => ({
  page: css({ maxWidth: 1200 }),
  lead: css({ color: theme.colors.text.secondary, maxWidth: 900 }),
  section: css({ marginTop: theme.spacing(2) }),
  heading: css({ marginTop: theme.spacing(3) }),
  hint: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
  steps: css({ listStyle: 'none', padding: 0 }),
  step: css({
    padding: theme.spacing(1, 0),
    borderBottom: `1px solid ${theme.colors.border.weak}`,
  }),
});
