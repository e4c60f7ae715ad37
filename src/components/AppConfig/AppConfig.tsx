import React, { FormEvent, useMemo, useState } from 'react';
import { css } from '@emotion/css';
import { AppPluginMeta, GrafanaTheme2, PluginConfigPageProps, PluginMeta } from '@grafana/data';
import { isFetchError } from '@grafana/runtime';
import { Alert, Button, Combobox, ComboboxOption, Field, FieldSet, LinkButton, useStyles2 } from '@grafana/ui';

import { fetchBounded } from '../../api/bounded';
import { listInferscopeDataSources, NEW_DATASOURCE_URL } from '../../api/datasources';
import { AppSettings } from '../../constants';
import { testIds } from '../testIds';

export interface AppConfigProps extends PluginConfigPageProps<AppPluginMeta<AppSettings>> {}

const AppConfig = ({ plugin }: AppConfigProps) => {
  const s = useStyles2(getStyles);
  const { enabled, pinned, jsonData } = plugin.meta;
  const dataSources = useMemo(() => listInferscopeDataSources(), []);
  const [datasourceUid, setDatasourceUid] = useState<string>(jsonData?.datasourceUid ?? '');
  const [saveError, setSaveError] = useState<string>();

  const options: Array<ComboboxOption<string>> = dataSources.map((ds) => ({
    label: ds.isDefault ? `${ds.name} (default)` : ds.name,
    value: ds.uid,
    description: ds.uid,
  }));
  const unknownUid = datasourceUid !== '' && !dataSources.some((ds) => ds.uid === datasourceUid);
  if (unknownUid) {
    options.push({ label: `${datasourceUid} (not found)`, value: datasourceUid });
  }

  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    setSaveError(undefined);
    try {
      await updatePlugin(plugin.meta.id, {
        enabled,
        pinned,
        jsonData: { ...jsonData, datasourceUid },
      });
      // The app reads its settings once at load; a reload makes the new choice visible.
      window.location.reload();
    } catch (err) {
      setSaveError(errorMessage(err));
    }
  };

  return (
    <form onSubmit={onSubmit}>
      <FieldSet label="Data source">
        {dataSources.length === 0 && (
          <Alert severity="info" title="No Inferscope data source yet">
            Add a data source of type &quot;Inferscope&quot; first; the app&apos;s pages read everything through it.
            <div className={s.marginTop}>
              <LinkButton href={NEW_DATASOURCE_URL} icon="plus" size="sm">
                Add data source
              </LinkButton>
            </div>
          </Alert>
        )}
        <Field
          label="Inferscope data source"
          description="The data source the app's pages, dashboards and alert rules use. Empty: the default one, else the first found."
          invalid={unknownUid}
          error={unknownUid ? 'No Inferscope data source has this uid.' : undefined}
        >
          <Combobox
            id="inferscope-config-datasource"
            data-testid={testIds.appConfig.datasource}
            width={60}
            options={options}
            value={datasourceUid || null}
            isClearable
            placeholder="Use the default Inferscope data source"
            onChange={(v) => setDatasourceUid(v?.value ?? '')}
          />
        </Field>
        {saveError && (
          <Alert severity="error" title="Saving failed">
            {saveError}
          </Alert>
        )}
        <div className={s.marginTop}>
          <Button type="submit" data-testid={testIds.appConfig.submit}>
            Save settings
          </Button>
        </div>
      </FieldSet>
    </form>
  );
};

export default AppConfig;

const getStyles = (theme: GrafanaTheme2) => ({
  marginTop: css({ marginTop: theme.spacing(2) }),
});

function errorMessage(err: unknown): string {
  if (isFetchError<{ message?: string }>(err)) {
    return err.data?.message || `HTTP ${err.status}`;
  }
  return err instanceof Error ? err.message : 'the settings could not be saved';
}

async function updatePlugin(pluginId: string, data: Partial<PluginMeta<AppSettings>>) {
  return fetchBounded({
    url: `/api/plugins/${encodeURIComponent(pluginId)}/settings`,
    method: 'POST',
    data,
  });
}
