import React from 'react';
import { MemoryRouter } from 'react-router-dom';
import { render } from '@testing-library/react';
import { AppRootProps, PluginType } from '@grafana/data';

import App from '../components/App/App';

const props = {
  basename: '/a/inferscope-monitor-app',
  meta: { id: 'inferscope-monitor-app', name: 'Inferscope', type: PluginType.app, enabled: true, jsonData: {} },
  path: '',
  query: {},
  onNavChanged: jest.fn(),
} as unknown as AppRootProps;

/** Renders the whole app, as Grafana mounts it, at `path` (relative to the app's base URL). */
export function renderApp(path: string) {
  return render(
    <MemoryRouter initialEntries={[path]} future={{ v7_startTransition: true, v7_relativeSplatPath: true }}>
      <React.Suspense fallback="loading">
        <App {...props} />
      </React.Suspense>
    </MemoryRouter>
  );
}
