import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Alert, Button, LinkButton, LoadingPlaceholder, Stack, useStyles2 } from '@grafana/ui';

import { dataSourceSettingsUrl } from '../../api/datasources';
import { errorMessage } from '../../api/resource';
import { DataSourcePicker } from '../../components/DataSourcePicker/DataSourcePicker';
import { NoDataSourcePage, Page } from '../../components/Page/Page';
import { RequestErrorAlert } from '../../components/RequestError/RequestError';
import { AppSettings, PLUGIN_BASE_URL, ROUTES } from '../../constants';
import { testIds } from '../../components/testIds';
import { useDataSourceChoice } from '../../hooks/useDataSourceChoice';
import { SetupChecklist } from './SetupChecklist';
import { useSetup } from './useSetup';

interface Props {
  settings: AppSettings;
}

/** The overview dashboard the app includes (dashboards/inferscope-overview.json). */
export const OVERVIEW_DASHBOARD_URL = '/d/inferscope-overview/inferscope-overview';
export const ALERT_RULES_URL = `${PLUGIN_BASE_URL}/alert-rules`;
/** The app's own pages: the fifteen-minute triage and the release gate. */
export const TRIAGE_URL = `${PLUGIN_BASE_URL}/${ROUTES.Triage}`;
export const GATE_URL = `${PLUGIN_BASE_URL}/${ROUTES.Gate}`;

function Home({ settings }: Props) {
  const s = useStyles2(getStyles);
  const selection = useDataSourceChoice(settings);
  const { choice, uid } = selection;
  const [state, recheck] = useSetup(uid);

  if (selection.dataSources.length === 0) {
    return (
      <NoDataSourcePage testId={testIds.home.container}>
        Inferscope reads Prometheus and the GPU probes through its data source. Add a data source of type
        &quot;Inferscope&quot;, point it at your Prometheus, then come back here.
      </NoDataSourcePage>
    );
  }

  return (
    <Page testId={testIds.home.container} maxWidth={960}>
      {choice.missingUid && (
        <Alert severity="warning" title="Configured data source not found">
          The app settings name the data source uid &quot;{choice.missingUid}&quot;, which does not exist or which you
          cannot query; showing another Inferscope data source instead. Pick one on the app&apos;s configuration page.
        </Alert>
      )}

      <Stack direction="row" alignItems="flex-end" gap={1}>
        <DataSourcePicker id="inferscope-home-datasource" width={40} selection={selection} className={s.noMargin} />
        {uid && (
          <LinkButton variant="secondary" icon="cog" href={dataSourceSettingsUrl(uid)}>
            Data source settings
          </LinkButton>
        )}
        <Button variant="secondary" icon="sync" onClick={recheck} disabled={state?.kind === 'loading'}>
          Check again
        </Button>
      </Stack>

      <nav aria-label="Inferscope" className={s.section}>
        <Stack direction="row" gap={1}>
          <LinkButton icon="apps" href={OVERVIEW_DASHBOARD_URL}>
            Open the overview dashboard
          </LinkButton>
          <LinkButton icon="search" variant="secondary" href={TRIAGE_URL}>
            Triage a model or node
          </LinkButton>
          <LinkButton icon="code-branch" variant="secondary" href={GATE_URL}>
            Release gate
          </LinkButton>
          <LinkButton icon="bell" variant="secondary" href={ALERT_RULES_URL}>
            Alert rules
          </LinkButton>
        </Stack>
      </nav>

      <div className={s.section}>
        {state?.kind === 'loading' && <LoadingPlaceholder text="Checking the set-up…" />}
        {state?.kind === 'failed' && (
          <RequestErrorAlert
            title="The data source did not answer"
            message={errorMessage(state.error)}
            hint={
              <>
                The data source backend (gpx_inferscope_datasource) must be running: check that the plugin&apos;s binary
                for this platform is present and executable, and look for &quot;inferscope&quot; in the Grafana server
                log.
              </>
            }
          />
        )}
        {state?.kind === 'loaded' && <SetupChecklist setup={state.value} />}
      </div>
    </Page>
  );
}

export default Home;

const getStyles = (theme: GrafanaTheme2) => ({
  noMargin: css({ marginBottom: 0 }),
  section: css({ marginTop: theme.spacing(2) }),
});
