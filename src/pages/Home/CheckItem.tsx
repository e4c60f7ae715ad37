import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Icon, useStyles2 } from '@grafana/ui';

export type CheckState = 'ok' | 'warning' | 'failing';

interface Props {
  title: string;
  state: CheckState;
  hint?: string;
  children?: React.ReactNode;
}

const STATE_TEXT: Record<CheckState, string> = { ok: 'OK', warning: 'Warning', failing: 'Failing' };

/** One line of the set-up checklist: a state that is written out, not only coloured. */
export function CheckItem({ title, state, hint, children }: Props) {
  const s = useStyles2(getStyles);
  return (
    <li className={s.item} aria-label={title}>
      <div className={s.head}>
        <Icon
          name={state === 'ok' ? 'check-circle' : 'exclamation-triangle'}
          className={state === 'ok' ? s.ok : state === 'warning' ? s.warning : s.failing}
        />
        <span className={s.title}>{title}</span>
        <span className={s.state}>{STATE_TEXT[state]}</span>
      </div>
      {children && <div className={s.body}>{children}</div>}
      {hint && (
        <div className={s.hint}>
          <Icon name="info-circle" /> <span>{hint}</span>
        </div>
      )}
    </li>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  item: css({
    listStyle: 'none',
    padding: theme.spacing(1.5, 2),
    borderBottom: `1px solid ${theme.colors.border.weak}`,
  }),
  head: css({ display: 'flex', alignItems: 'center', gap: theme.spacing(1) }),
  title: css({ fontWeight: theme.typography.fontWeightMedium }),
  state: css({ color: theme.colors.text.secondary, marginLeft: 'auto' }),
  body: css({ marginTop: theme.spacing(0.5), marginLeft: theme.spacing(3), color: theme.colors.text.secondary }),
  hint: css({ marginTop: theme.spacing(0.5), marginLeft: theme.spacing(3), color: theme.colors.text.primary }),
  ok: css({ color: theme.colors.success.text }),
  warning: css({ color: theme.colors.warning.text }),
  failing: css({ color: theme.colors.error.text }),
});
