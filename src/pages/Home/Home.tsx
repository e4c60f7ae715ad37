import React, { useMemo, useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { PluginPage } from '@grafana/runtime';
import {
  Alert,
  Button,
  Combobox,
  ComboboxOption,
  Field,
  LinkButton,
  LoadingPlaceholder,
  Stack,
  useStyles2,
} from '@grafana/ui';

import {
  chooseDataSource,
  dataSourceSettingsUrl,
  listInferscopeDataSources,
  NEW_DATASOURCE_URL,
} from '../../api/datasources';
import { AppSettings, PLUGIN_BASE_URL, ROUTES } from '../../constants';
import { testIds } from '../../components/testIds';
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
  const dataSources = useMemo(() => listInferscopeDataSources(), []);
  const choice = useMemo(() => chooseDataSource(dataSources, settings.datasourceUid), [dataSources, settings]);
  const [uid, setUid] = useState<string | undefined>(choice.selected?.uid);
  const [state, recheck] = useSetup(uid);

  if (dataSources.length === 0) {
    return (
      <PluginPage>
        <div data-testid={testIds.home.container}>
          <Alert severity="warning" title="No Inferscope data source">
            <p>
              Inferscope reads Prometheus and the GPU probes through its data source. Add a data source of type
              &quot;Inferscope&quot;, point it at your Prometheus, then come back here.
            </p>
            <LinkButton href={NEW_DATASOURCE_URL} icon="plus">
              Add data source
            </LinkButton>
          </Alert>
        </div>
      </PluginPage>
    );
  }

  const options: Array<ComboboxOption<string>> = dataSources.map((ds) => ({ label: ds.name, value: ds.uid }));

  return (
    <PluginPage>
      <div data-testid={testIds.home.container} className={s.page}>
        {choice.missingUid && (
          <Alert severity="warning" title="Configured data source not found">
            The app settings name the data source uid &quot;{choice.missingUid}&quot;, which does not exist or which you
            cannot query; showing another Inferscope data source instead. Pick one on the app&apos;s configuration page.
          </Alert>
        )}

        <Stack direction="row" alignItems="flex-end" gap={1}>
          <Field label="Data source" className={s.noMargin}>
            <Combobox
              id="inferscope-home-datasource"
              width={40}
              options={options}
              value={uid}
              onChange={(v) => setUid(v.value)}
            />
          </Field>
          {uid && (
            <LinkButton variant="secondary" icon="cog" href={dataSourceSettingsUrl(uid)}>
              Data source settings
            </LinkButton>
          )}
          <Button variant="secondary" icon="sync" onClick={recheck} disabled={state.kind === 'loading'}>
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
          {state.kind === 'loading' && <LoadingPlaceholder text="Checking the set-up…" />}
          {state.kind === 'failed' && (
            <Alert severity="error" title="The data source did not answer">
              <p>{state.message}</p>
              <p>
                The data source backend (gpx_inferscope_datasource) must be running: check that the plugin&apos;s binary
                for this platform is present and executable, and look for &quot;inferscope&quot; in the Grafana server
                log.
              </p>
            </Alert>
          )}
          {state.kind === 'loaded' && <SetupChecklist setup={state.setup} />}
        </div>
      </div>
    </PluginPage>
  );
}

export default Home;

const getStyles = (theme: GrafanaTheme2) => ({
  page: css({ maxWidth: 960 }),
  noMargin: css({ marginBottom: 0 }),
  section: css({ marginTop: theme.spacing(2) }),
});
