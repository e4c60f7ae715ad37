import React, { useState } from 'react';
import { useSearchParams } from 'react-router-dom';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Alert, Badge, Button, Field, Input, LoadingPlaceholder, Stack, useStyles2 } from '@grafana/ui';

import { fetchTriage, TriageAnswer, TriageRequest, TriageSegment } from '../../api/triage';
import { DataSourcePicker } from '../../components/DataSourcePicker/DataSourcePicker';
import { NoDataSourcePage, Page } from '../../components/Page/Page';
import { RequestErrorAlert, requestFailure } from '../../components/RequestError/RequestError';
import { Notices } from '../../components/Notices/Notices';
import { AppSettings } from '../../constants';
import { useDataSourceChoice } from '../../hooks/useDataSourceChoice';
import { useFormFields } from '../../hooks/useFormFields';
import { useRequest } from '../../hooks/useRequest';
import { CauseCard } from './CauseCard';
import { checkForm, formFromSearch, isNodeForm, searchFromForm, TriageForm } from './form';
import { formatChange, formatTime, formatValue } from './format';

interface Props {
  settings: AppSettings;
}

export const triageTestIds = {
  container: 'data-testid triage-container',
  verdict: 'data-testid triage-verdict',
  error: 'data-testid triage-error',
  nodeHint: 'data-testid triage-node-hint',
  change: 'data-testid triage-change',
};

type Submitted = { request: TriageRequest; attempt: number };

const PROMETHEUS_HINT =
  'The triage queries Prometheus through the data source: check that Prometheus is up and reachable from the Grafana server (Home page).';

const verdictView = {
  diagnosed: { severity: 'warning', title: (a: TriageAnswer) => `Diagnosis: ${a.causes[0]?.title ?? 'see below'}` },
  no_direction: { severity: 'info', title: () => 'No clear direction' },
  healthy: { severity: 'success', title: () => 'Healthy: nothing stands out' },
} as const;

function Triage({ settings }: Props) {
  const s = useStyles2(getStyles);
  const selection = useDataSourceChoice(settings);
  const { uid } = selection;
  const [search, setSearch] = useSearchParams();
  // The page opens on the URL's form and, when it names a model or a node (an alert's link),
  // runs it at once.
  const [initial] = useState(() => {
    const form = formFromSearch(search);
    return { form, check: form.model || form.node ? checkForm(form) : undefined };
  });
  const [form, set] = useFormFields<TriageForm>(initial.form);
  const [errors, setErrors] = useState(initial.check && !initial.check.ok ? initial.check.errors : {});
  const [submitted, setSubmitted] = useState<Submitted | undefined>(
    initial.check?.ok ? { request: initial.check.request, attempt: 0 } : undefined
  );
  const loaded = useRequest(
    uid && submitted
      ? { key: `${uid}#${JSON.stringify(submitted)}`, load: () => fetchTriage(uid, submitted.request) }
      : undefined
  );
  const byNode = isNodeForm(form);

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

  if (selection.dataSources.length === 0) {
    return (
      <NoDataSourcePage testId={triageTestIds.container}>
        The triage queries Prometheus through the Inferscope data source. Add one, then come back.
      </NoDataSourcePage>
    );
  }

  return (
    <Page
      testId={triageTestIds.container}
      lead={
        <>
          The fifteen-minute triage path as one call: which model and version jumped, queue or compute, GPU resources,
          framework internals and inputs, network and warm-up, each compared with the time before; the causes with
          evidence come back ranked, with the next step and the dashboard panels to open.
        </>
      }
    >
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
          <DataSourcePicker id="inferscope-triage-datasource" width={28} selection={selection} />
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
          <RequestErrorAlert testId={triageTestIds.error} {...requestFailure(loaded.error, PROMETHEUS_HINT)} />
        )}
        {loaded?.kind === 'loaded' && <TriageResult answer={loaded.value} />}
      </div>
    </Page>
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
          {answer.change && (
            <p className={s.hint} data-testid={triageTestIds.change}>
              Change point at {formatTime(answer.change.at)} in {answer.change.where}: the {answer.change.signal ?? 'time per request'} stepped from{' '}
              {formatValue(answer.change.level, 's')} to {formatValue(answer.change.now, 's')}. Only the part after it (
              {Math.round(answer.change.covers * 100)} % of the {answer.change.asked.duration} asked about) is compared.
              {answer.change.lastInterval === true &&
                ' Each rate after it is read over its last scrape interval, so no point mixes in the minutes before the change.'}
              {answer.change.points === 1 && ' The change is one point old: one interval of requests, so ask again in a few minutes to confirm.'}
            </p>
          )}
        </Alert>
      </div>

      <Segments answer={answer} />

      {(answer.episodes ?? []).length > 0 && (
        <>
          <h3 className={s.heading}>Change points in the window</h3>
          <ol className={s.steps} aria-label="Change points">
            {(answer.episodes ?? []).map((ep) => (
              <li key={ep.window.start} className={s.step}>
                <div>
                  <strong>
                    {formatTime(ep.window.start)} – {formatTime(ep.window.end)}
                  </strong>{' '}
                  <span className={s.hint}>
                    {ep.where}, ×{ep.peak} its level · {ep.verdict.replace(/_/g, ' ')}
                    {ep.confidence ? ` (${ep.confidence} confidence)` : ''}
                  </span>
                </div>
                <div>{ep.summary}</div>
              </li>
            ))}
          </ol>
        </>
      )}

      {answer.causes.length > 0 && (
        <>
          <h3 className={s.heading}>Ranked causes</h3>
          {answer.causes.map((c, i) => (
            <CauseCard key={`${c.id}-${c.window?.start ?? ''}-${i}`} cause={c} rank={i + 1} />
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

      {(answer.notMeasured ?? []).length > 0 && (
        <>
          <h3 className={s.heading}>Not measured</h3>
          <ul aria-label="Not measured" className={s.hint}>
            {(answer.notMeasured ?? []).map((n) => (
              <li key={n}>{n}</li>
            ))}
          </ul>
        </>
      )}

      <Notices notices={answer.notices} />
    </>
  );
}

const segmentTitle = (seg: TriageSegment) => (seg.parent ? `${seg.parent} › ${seg.segment}` : seg.segment);

/** Where the time went: the latency change of the subject that changed most, by segment. */
function Segments({ answer }: { answer: TriageAnswer }) {
  const s = useStyles2(getStyles);
  const segments = (answer.segments ?? []).filter((seg) => seg.before !== null || seg.now !== null);
  if (segments.length === 0) {
    return null;
  }
  return (
    <>
      <h3 className={s.heading}>Where the time went</h3>
      <p className={s.hint}>
        {answer.segmentsOf ? `${answer.segmentsOf}: ` : ''}
        {answer.lead
          ? `the ${answer.lead} segment explains most of the latency change; its causes are looked for first.`
          : 'the latency did not change enough for one segment to lead.'}
      </p>
      <table className={s.table} aria-label="Latency segments">
        <thead>
          <tr>
            <th>Segment</th>
            <th>Before</th>
            <th>Now</th>
            <th>Change</th>
            <th>Share of the change</th>
          </tr>
        </thead>
        <tbody>
          {segments.map((seg) => (
            <tr key={segmentTitle(seg)} className={seg.segment === answer.lead ? s.lead : undefined}>
              <td>{segmentTitle(seg)}</td>
              <td>{formatValue(seg.before, 's')}</td>
              <td>{formatValue(seg.now, 's')}</td>
              <td>{formatChange(seg.before && seg.now !== null ? seg.now / seg.before - 1 : null)}</td>
              <td>{seg.share === null ? '—' : `${(seg.share * 100).toFixed(0)} %`}</td>
            </tr>
          ))}
        </tbody>
      </table>
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
  section: css({ marginTop: theme.spacing(2) }),
  heading: css({ marginTop: theme.spacing(3) }),
  hint: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
  steps: css({ listStyle: 'none', padding: 0 }),
  table: css({
    borderCollapse: 'collapse',
    'th, td': { padding: theme.spacing(0.5, 1), textAlign: 'left' },
  }),
  lead: css({ fontWeight: theme.typography.fontWeightBold }),
  step: css({
    padding: theme.spacing(1, 0),
    borderBottom: `1px solid ${theme.colors.border.weak}`,
  }),
});
