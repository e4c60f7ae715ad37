import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2, locationUtil } from '@grafana/data';
import { Badge, BadgeColor, LinkButton, useStyles2 } from '@grafana/ui';

import { TriageCause } from '../../api/triage';
import { formatChange, formatTime, formatValue } from './format';

interface Props {
  cause: TriageCause;
  rank: number;
}

const confidenceColor: Record<string, BadgeColor> = { high: 'red', medium: 'orange', low: 'blue' };

/** One ranked cause: its score, the evidence before vs now, what to do, where to look. */
export function CauseCard({ cause, rank }: Props) {
  const s = useStyles2(getStyles);
  const score = Math.max(0, Math.min(1, Number.isFinite(cause.score) ? cause.score : 0));
  return (
    <section className={s.card} aria-label={cause.title}>
      <div className={s.header}>
        <span className={s.rank}>{rank}</span>
        <h4 className={s.title}>{cause.title}</h4>
        {cause.confidence && (
          <Badge color={confidenceColor[cause.confidence] ?? 'blue'} text={`${cause.confidence} confidence`} />
        )}
        <span className={s.layer}>
          {cause.layer} layer
          {cause.model ? ` · ${cause.model}` : ''}
          {cause.version ? ` · ${cause.version}` : ''}
          {cause.instance ? ` · ${cause.instance}` : ''}
          {cause.window ? ` · ${formatTime(cause.window.start)} – ${formatTime(cause.window.end)}` : ''}
        </span>
      </div>
      <div className={s.scoreRow}>
        <div
          className={s.bar}
          role="meter"
          aria-label="Score"
          aria-valuemin={0}
          aria-valuemax={1}
          aria-valuenow={score}
        >
          <div className={s.fill} style={{ width: `${Math.round(score * 100)}%` }} />
        </div>
        <span className={s.scoreText}>score {score.toFixed(2)}</span>
      </div>
      {cause.summary && <p>{cause.summary}</p>}
      {cause.evidence.length > 0 && (
        <table className={s.table} aria-label={`Evidence: ${cause.title}`}>
          <thead>
            <tr>
              <th>Evidence</th>
              <th>Before</th>
              <th>Now</th>
              <th>Change</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {cause.evidence.map((e, i) => (
              <tr key={i} aria-label={e.what}>
                <td>{e.what}</td>
                <td>{formatValue(e.before, e.unit)}</td>
                <td>{formatValue(e.now, e.unit)}</td>
                <td>{formatChange(e.change)}</td>
                <td className={s.note}>{e.note}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {cause.next && (
        <p>
          <strong>Next step: </strong>
          {cause.next}
        </p>
      )}
      {cause.links.length > 0 && (
        <div className={s.links}>
          {cause.links.map((l) => (
            <LinkButton
              key={l.url}
              size="sm"
              variant="secondary"
              icon="apps"
              href={locationUtil.assureBaseUrl(l.url)}
              tooltip={l.row ? `Row "${l.row}" of the overview dashboard` : undefined}
            >
              {l.title}
            </LinkButton>
          ))}
        </div>
      )}
    </section>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  card: css({
    border: `1px solid ${theme.colors.border.weak}`,
    borderRadius: theme.shape.radius.default,
    padding: theme.spacing(2),
    marginBottom: theme.spacing(2),
    background: theme.colors.background.primary,
  }),
  header: css({ display: 'flex', alignItems: 'center', gap: theme.spacing(1), flexWrap: 'wrap' }),
  rank: css({
    display: 'inline-flex',
    justifyContent: 'center',
    alignItems: 'center',
    width: 24,
    height: 24,
    borderRadius: '50%',
    background: theme.colors.background.secondary,
    fontWeight: theme.typography.fontWeightMedium,
  }),
  title: css({ margin: 0 }),
  layer: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
  scoreRow: css({ display: 'flex', alignItems: 'center', gap: theme.spacing(1), margin: theme.spacing(1, 0) }),
  bar: css({
    width: 200,
    height: 8,
    borderRadius: 4,
    background: theme.colors.background.secondary,
    overflow: 'hidden',
  }),
  fill: css({ height: '100%', background: theme.colors.primary.main }),
  scoreText: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
  table: css({
    width: '100%',
    borderCollapse: 'collapse',
    marginBottom: theme.spacing(1),
    'th, td': {
      textAlign: 'left',
      padding: theme.spacing(0.5, 1),
      borderBottom: `1px solid ${theme.colors.border.weak}`,
    },
    th: { color: theme.colors.text.secondary, fontWeight: theme.typography.fontWeightMedium },
  }),
  note: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
  links: css({ display: 'flex', gap: theme.spacing(1), flexWrap: 'wrap' }),
});
