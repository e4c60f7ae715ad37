import React, { ReactNode } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { PluginPage } from '@grafana/runtime';
import { Alert, LinkButton, useStyles2 } from '@grafana/ui';

import { NEW_DATASOURCE_URL } from '../../api/datasources';

interface PageProps {
  testId: string;
  /** What the page is for, above everything else. */
  lead?: ReactNode;
  maxWidth?: number;
  children: ReactNode;
}

/** An app page: Grafana's page frame around a column of at most `maxWidth` pixels. */
export function Page({ testId, lead, maxWidth = 1200, children }: PageProps) {
  const s = useStyles2(getStyles, maxWidth);
  return (
    <PluginPage>
      <div data-testid={testId} className={s.page}>
        {lead && <p className={s.lead}>{lead}</p>}
        {children}
      </div>
    </PluginPage>
  );
}

/** The page in place of one that needs an Inferscope data source when there is none; `children` says why. */
export function NoDataSourcePage({ testId, children }: { testId: string; children: ReactNode }) {
  return (
    <PluginPage>
      <div data-testid={testId}>
        <Alert severity="warning" title="No Inferscope data source">
          <p>{children}</p>
          <LinkButton href={NEW_DATASOURCE_URL} icon="plus">
            Add data source
          </LinkButton>
        </Alert>
      </div>
    </PluginPage>
  );
}

const getStyles = (theme: GrafanaTheme2, maxWidth: number) => ({
  page: css({ maxWidth }),
  lead: css({ color: theme.colors.text.secondary, maxWidth: 900 }),
});
