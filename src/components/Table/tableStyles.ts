import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';

/** The pages' plain tables: a row a line, headers in the secondary colour; `why` for a row's reason. */
export const getTableStyles = (theme: GrafanaTheme2) => ({
  table: css({
    width: '100%',
    borderCollapse: 'collapse',
    'th, td': {
      textAlign: 'left',
      verticalAlign: 'top',
      padding: theme.spacing(0.75, 1),
      borderBottom: `1px solid ${theme.colors.border.weak}`,
    },
    th: { color: theme.colors.text.secondary, fontWeight: theme.typography.fontWeightMedium },
  }),
  why: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
});
