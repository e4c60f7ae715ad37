import { screen } from '@testing-library/react';

import { installBackend, installDataSources } from '../../test/grafanaServices';
import { renderApp } from '../../test/renderApp';
import { gateTestIds } from '../../pages/Gate/Gate';
import { triageTestIds } from '../../pages/Triage/Triage';
import pluginJson from '../../plugin.json';
import { PLUGIN_BASE_URL } from '../../constants';
import { testIds } from '../testIds';

function renderAt(path: string) {
  installDataSources([]);
  installBackend({});
  renderApp(path);
}

describe('App', () => {
  test.each(['/home', '/anything-else'])('%s renders the Home page', async (path) => {
    renderAt(path);
    expect(await screen.findByTestId(testIds.home.container)).toBeInTheDocument();
  });

  test.each([
    ['/triage?model=recsys-ranker', triageTestIds.container],
    ['/gate', gateTestIds.container],
  ])('%s renders its page', async (path, testId) => {
    renderAt(path);
    expect(await screen.findByTestId(testId)).toBeInTheDocument();
  });

  test('every page in the navigation has a route', () => {
    const pages = pluginJson.includes
      .filter((i) => i.type === 'page' && i.path?.startsWith('/a/%PLUGIN_ID%/'))
      .map((i) => i.path?.replace('/a/%PLUGIN_ID%', PLUGIN_BASE_URL));
    expect(pages).toEqual(
      expect.arrayContaining([`${PLUGIN_BASE_URL}/triage`, `${PLUGIN_BASE_URL}/gate`, `${PLUGIN_BASE_URL}/home`])
    );
  });
});
