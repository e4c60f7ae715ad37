import React from 'react';
import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { PluginType } from '@grafana/data';

import { DATASOURCE_TYPE } from '../../constants';
import { dataSourceSettings, installBackend, installDataSources } from '../../test/grafanaServices';
import { testIds } from '../testIds';
import AppConfig, { AppConfigProps } from './AppConfig';

const SETTINGS_URL = '/api/plugins/inferscope-monitor-app/settings';

function props(jsonData: Record<string, unknown>): AppConfigProps {
  return {
    plugin: {
      meta: {
        id: 'inferscope-monitor-app',
        name: 'Inferscope',
        type: PluginType.app,
        enabled: true,
        pinned: true,
        jsonData,
      },
    },
    query: {},
  } as unknown as AppConfigProps;
}

describe('AppConfig', () => {
  const realLocation = window.location;
  let reload: jest.Mock;

  beforeEach(() => {
    reload = jest.fn();
    // jsdom cannot navigate; observe the reload the page asks for instead.
    Object.defineProperty(window, 'location', { configurable: true, value: { ...realLocation, reload } });
    installDataSources([
      dataSourceSettings({ uid: 'prod', name: 'Inferscope prod', type: DATASOURCE_TYPE, isDefault: false }),
      dataSourceSettings({ uid: 'staging', name: 'Inferscope staging', type: DATASOURCE_TYPE }),
      dataSourceSettings({ uid: 'prom', name: 'Prometheus', type: 'prometheus' }),
    ]);
  });

  afterEach(() => {
    Object.defineProperty(window, 'location', { configurable: true, value: realLocation });
  });

  test('saves the chosen data source uid in the app jsonData', async () => {
    const requests = installBackend({
      [`POST ${SETTINGS_URL}`]: { status: 200, body: { message: 'Plugin settings updated' } },
    });
    render(<AppConfig {...props({ datasourceUid: 'prod' })} />);

    const picker = screen.getByRole('combobox', { name: /inferscope data source/i });
    expect(picker).toHaveValue('Inferscope prod');

    await userEvent.click(picker);
    // Only data sources of our type are offered.
    expect(screen.queryByRole('option', { name: /Prometheus/ })).not.toBeInTheDocument();
    await userEvent.click(await screen.findByRole('option', { name: /Inferscope staging/ }));
    await userEvent.click(screen.getByTestId(testIds.appConfig.submit));

    await waitFor(() => expect(reload).toHaveBeenCalled());
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      url: SETTINGS_URL,
      method: 'POST',
      data: { enabled: true, pinned: true, jsonData: { datasourceUid: 'staging' } },
    });
  });

  test('shows the error and stays on the page when saving fails', async () => {
    installBackend({ [`POST ${SETTINGS_URL}`]: { status: 403, body: { message: 'Permission denied' } } });
    render(<AppConfig {...props({})} />);

    await userEvent.click(screen.getByTestId(testIds.appConfig.submit));

    expect(await screen.findByText('Saving failed')).toBeInTheDocument();
    expect(screen.getByText('Permission denied')).toBeInTheDocument();
    expect(reload).not.toHaveBeenCalled();
  });

  test('flags a stored uid that names no data source', () => {
    installBackend({});
    render(<AppConfig {...props({ datasourceUid: 'gone' })} />);
    expect(screen.getByText('No Inferscope data source has this uid.')).toBeInTheDocument();
  });
});
