import React, { useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Alert, Badge, Button, Field, Input, RadioButtonGroup, Spinner, Stack, useStyles2 } from '@grafana/ui';

import { BacktestAnswer, BacktestEpisode, BacktestInterval, BacktestRule } from '../../api/backtest';
import { parseTimeParam, toRFC3339 } from '../../api/triage';
import { Notices } from '../../components/Notices/Notices';
import { formatSeconds, formatTime } from '../Triage/format';

/** What the page knows of the last backtest. `stale`: the parameters changed since it ran. */
export type BacktestView =
  | { kind: 'running' }
  | { kind: 'loaded'; answer: BacktestAnswer; stale: boolean }
  | { kind: 'failed'; message: string };

export type BacktestSpan = '1d' | '3d' | '7d' | 'range';

const SPANS: Array<{ label: string; value: BacktestSpan; description: string }> = [
  { label: 'Last day', value: '1d', description: 'the last 24 hours' },
  { label: 'Last 3 days', value: '3d', description: 'the last 72 hours' },
  { label: 'Last 7 days', value: '7d', description: 'an observation week' },
  { label: 'Time range', value: 'range', description: 'from and to as written' },
];

const DAY_MS = 86_400_000;

/** The window to backtest, resolved now; an error message when the typed range is not one. */
export function backtestWindow(
  span: BacktestSpan,
  range: { from: string; to: string },
  now: Date = new Date()
): { from: string; to: string } | { error: string } {
  if (span !== 'range') {
    const days = Number(span.replace('d', ''));
    return { from: toRFC3339(new Date(now.getTime() - days * DAY_MS)), to: toRFC3339(now) };
  }
  // One now for both ends: `now-1d` to `now` is exactly a day.
  const from = parseTimeParam(range.from, false, now);
  const to = parseTimeParam(range.to, true, now);
  if (!from || !to) {
    return { error: `${!from ? 'from' : 'to'}: not a time; use RFC 3339, milliseconds since the epoch or now-7d` };
  }
  if (from >= to) {
    return { error: 'to: must be after from' };
  }
  return { from: toRFC3339(from), to: toRFC3339(to) };
}

interface ControlsProps {
  view?: BacktestView;
  onRun: (window: { from: string; to: string }) => void;
}

/** The Backtest action: the window, the button and what the run found overall. */
export function BacktestControls({ view, onRun }: ControlsProps) {
  const s = useStyles2(getStyles);
  const [span, setSpan] = useState<BacktestSpan>('7d');
  const [range, setRange] = useState({ from: 'now-7d', to: 'now' });
  const [error, setError] = useState<string>();
  const running = view?.kind === 'running';

  const run = () => {
    const w = backtestWindow(span, range);
    if ('error' in w) {
      setError(w.error);
      return;
    }
    setError(undefined);
    onRun(w);
  };

  return (
    <section className={s.box} aria-label="Backtest">
      <h3 className={s.heading}>Backtest over history</h3>
      <p className={s.hint}>
        Evaluates every rule over Prometheus history as the alerting engine would (same queries, same hold times, same
        warm-up filter) with the parameters above, and shows beside each rule how often and how long it would have
        fired. Tune the thresholds here before provisioning instead of after a week of noise.
      </p>
      <Stack direction="row" gap={1} alignItems="flex-end" wrap="wrap">
        <Field label="History" className={s.noMargin}>
          <RadioButtonGroup
            aria-label="Backtest history"
            options={SPANS}
            value={span}
            onChange={setSpan}
            disabled={running}
          />
        </Field>
        {span === 'range' && (
          <>
            <Field label="From" className={s.noMargin}>
              <Input
                id="backtest-from"
                width={24}
                value={range.from}
                onChange={(e) => setRange({ ...range, from: e.currentTarget.value })}
              />
            </Field>
            <Field label="To" className={s.noMargin}>
              <Input
                id="backtest-to"
                width={24}
                value={range.to}
                onChange={(e) => setRange({ ...range, to: e.currentTarget.value })}
              />
            </Field>
          </>
        )}
        <Button icon={running ? undefined : 'history'} onClick={run} disabled={running}>
          {running ? 'Backtesting…' : 'Backtest'}
        </Button>
        {running && (
          <span className={s.hint}>
            <Spinner inline /> evaluating every rule over the history; this can take tens of seconds
          </span>
        )}
      </Stack>
      {error && (
        <Alert severity="error" title="Not a time range">
          {error}
        </Alert>
      )}
      {view?.kind === 'failed' && (
        <Alert severity="error" title="The backtest did not run">
          {view.message}
        </Alert>
      )}
      {view?.kind === 'loaded' && <BacktestSummary answer={view.answer} stale={view.stale} />}
    </section>
  );
}

function BacktestSummary({ answer, stale }: { answer: BacktestAnswer; stale: boolean }) {
  const s = useStyles2(getStyles);
  const firing = answer.rules.filter((r) => r.fired > 0);
  const total = firing.reduce((n, r) => n + r.fired, 0);
  return (
    <div className={s.summary} data-testid="data-testid backtest-summary">
      {stale && (
        <Alert severity="info" title="The parameters changed since this backtest">
          The figures below are for the parameters as they were; run the backtest again.
        </Alert>
      )}
      <p>
        From {formatTime(answer.from)} to {formatTime(answer.to)} (every {answer.interval}): {firing.length} of{' '}
        {answer.rules.length} rules would have fired, {total} time{total === 1 ? '' : 's'} in all.{' '}
        {answer.warmups.length} warm-up{answer.warmups.length === 1 ? '' : 's'} and {answer.deploys.length} deploy
        {answer.deploys.length === 1 ? '' : 's'} in the history. {answer.queries} Prometheus queries in{' '}
        {answer.seconds.toFixed(1)} s.
      </p>
      <Notices notices={answer.notices} label="Backtest notices" />
    </div>
  );
}

/** The backtest cell of one rule: fired count and time firing, or why there is none. */
export function BacktestCell({
  rule,
  view,
  expanded,
  onToggle,
}: {
  rule?: BacktestRule;
  view: BacktestView;
  expanded: boolean;
  onToggle: () => void;
}) {
  const s = useStyles2(getStyles);
  if (view.kind === 'running') {
    return (
      <span role="status" aria-label="Backtesting">
        <Spinner inline />
      </span>
    );
  }
  if (view.kind === 'failed' || !rule) {
    return <span className={s.hint}>—</span>;
  }
  if (rule.unavailable) {
    return <span className={s.hint}>not available</span>;
  }
  if (rule.error) {
    return <span className={s.error}>Backtest failed: {rule.error}</span>;
  }
  if (rule.fired === 0) {
    return <Badge color="green" text="Never fired" />;
  }
  return (
    <div>
      <div>
        <Badge
          color={rule.severity === 'P0' ? 'red' : rule.severity === 'P1' ? 'orange' : 'blue'}
          text={`Fired ${rule.fired}×`}
        />{' '}
        <span>{formatSeconds(rule.firingSeconds)} firing</span>
      </div>
      <Button
        size="sm"
        fill="text"
        icon={expanded ? 'angle-up' : 'angle-down'}
        onClick={onToggle}
        aria-expanded={expanded}
      >
        {expanded ? 'Hide episodes' : `Show ${rule.episodes.length} episode${rule.episodes.length === 1 ? '' : 's'}`}
      </Button>
    </div>
  );
}

function overlapText(o: BacktestInterval): { text: string; color: 'orange' | 'purple' } {
  if (o.kind === 'deploy') {
    const what = [o.model, o.version].filter(Boolean).join(' ');
    return { text: `deploy ${what} on ${o.instance}`.replace(/\s+/g, ' '), color: 'purple' };
  }
  return { text: `warm-up on ${o.instance}`, color: 'orange' };
}

/** The episodes of one rule: the alert's labels, when it fired, for how long, what overlapped. */
export function EpisodesTable({ rule }: { rule: BacktestRule }) {
  const s = useStyles2(getStyles);
  return (
    <table className={s.episodes} aria-label={`Episodes: ${rule.title}`}>
      <thead>
        <tr>
          <th>Labels</th>
          <th>Started firing</th>
          <th>Duration</th>
          <th>Peak</th>
          <th>Overlaps</th>
        </tr>
      </thead>
      <tbody>
        {rule.episodes.map((e: BacktestEpisode, i) => (
          <tr key={i} aria-label={`Episode ${i + 1}`}>
            <td>
              {Object.entries(e.labels)
                .map(([k, v]) => `${k}=${v}`)
                .join(', ')}
            </td>
            <td>{formatTime(e.start)}</td>
            <td>
              {formatSeconds(e.seconds)} {e.open && <Badge color="red" text="still firing at the end" />}
            </td>
            <td>{e.peak === null || e.peak === undefined ? '—' : Number(e.peak.toPrecision(4))}</td>
            <td>
              <Stack direction="row" gap={0.5} wrap="wrap">
                {e.overlaps.map((o, j) => {
                  const b = overlapText(o);
                  return <Badge key={j} color={b.color} text={b.text} />;
                })}
              </Stack>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  box: css({ marginBottom: theme.spacing(2) }),
  heading: css({ marginTop: theme.spacing(2) }),
  noMargin: css({ marginBottom: 0 }),
  summary: css({ marginTop: theme.spacing(1) }),
  hint: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
  error: css({ color: theme.colors.error.text, fontSize: theme.typography.bodySmall.fontSize }),
  episodes: css({
    width: '100%',
    borderCollapse: 'collapse',
    fontSize: theme.typography.bodySmall.fontSize,
    'th, td': { textAlign: 'left', padding: theme.spacing(0.5, 1) },
    th: { color: theme.colors.text.secondary, fontWeight: theme.typography.fontWeightMedium },
  }),
});
