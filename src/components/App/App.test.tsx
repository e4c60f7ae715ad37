import React from 'react';
import { MemoryRouter } from 'react-router-dom';
import { render, screen } from '@testing-library/react';
import { AppRootProps, PluginType } from '@grafana/data';

import { installBackend, installDataSources } from '../../test/grafanaServices';
import { testIds } from '../testIds';
import App from './App';

describe('App', () => {
  test.each(['/home', '/anything-else'])('%s renders the Home page', async (path) => {
    installDataSources([]);
    installBackend({});
    const props = {
      basename: '/a/inferscope-monitor-app',
      meta: { id: 'inferscope-monitor-app', name: 'Inferscope', type: PluginType.app, enabled: true, jsonData: {} },
      path: '',
      query: {},
      onNavChanged: jest.fn(),
    } as unknown as AppRootProps;

    render(
      <MemoryRouter initialEntries={[path]} future={{ v7_startTransition: true, v7_relativeSplatPath: true }}>
        <App {...props} />
      </MemoryRouter>
    );

    expect(await screen.findByTestId(testIds.home.container)).toBeInTheDocument();
  });
});
