import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2 } from '@grafana/ui';

/** What the data source noted beside an answer (a series it lacked, a label it guessed); nothing when none. */
export function Notices({ notices, label = 'Notices' }: { notices?: string[]; label?: string }) {
  const s = useStyles2(getStyles);
  if (!notices || notices.length === 0) {
    return null;
  }
  return (
    <ul className={s.notices} aria-label={label}>
      {notices.map((n) => (
        <li key={n}>{n}</li>
      ))}
    </ul>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  notices: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
});
